import { declareEnvSettings } from './env-settings.ts';

/** Where the node's locality comes from when no pod label gives one (role/platform-locality.ts), under Istio's names. */
export const platformEnv = declareEnvSettings({
  cloudPlatform: {
    env: 'CLOUD_PLATFORM',
    parse: (text: string) => text.toLowerCase(),
    description: "aws, azure or gcp: the locality from that cloud's metadata server (5 s at most) when no pod label gives one; none or unset: not asked",
  },
  gcpZone: {
    env: 'GCP_ZONE',
    description: "With CLOUD_PLATFORM=gcp: the zone (e.g. us-central1-a), so the metadata server is not asked",
  },
  gceMetadataHost: {
    env: 'GCE_METADATA_HOST',
    description: "With CLOUD_PLATFORM=gcp: the metadata server's host[:port] (default 169.254.169.254), as Google's clients honour it",
  },
});
