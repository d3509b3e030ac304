import { isIP } from 'node:net';
import { http } from '../shared/node-http.ts';
import { timeoutSignal } from '../shared/clock.ts';
import { localityFromLabels } from './locality.ts';

/**
 * The node's locality from the cloud's metadata server, as Istio's agent
 * takes it (pkg/bootstrap/platform) when no pod label gives one. Only for
 * a platform CLOUD_PLATFORM names: Istio also probes all three when it is
 * unset, up to 5 s at every start; here that probe is not made (see
 * docs/differences-from-istio.md). Every call is bounded in time and size:
 * the metadata server sits on the pod network, so its answer is input.
 */
export interface PlatformLocalityInput {
  /** CLOUD_PLATFORM, lower-cased: aws, azure, gcp; none or unset fetches nothing. */
  cloudPlatform: string | undefined;
  /** GCP_ZONE: GCP's zone without asking the metadata server. */
  gcpZone?: string;
  /** GCE_METADATA_HOST (`host` or `host:port`), as Google's metadata client honours it; default 169.254.169.254. */
  gceMetadataHost?: string;
  /** The pod has IPv6 (INSTANCE_IPS): AWS is asked on its IPv6 address, as Istio's agent asks it. */
  ipv6?: boolean;
  /** Where the metadata server is, `http://host[:port]` (tests); default per platform. */
  base?: string;
  /** The whole look-up's deadline. */
  timeoutMs?: number;
}

export type PlatformLocality = { locality: string; problem?: undefined } | { locality?: undefined; problem: string };

const metadataIp = '169.254.169.254';
const awsMetadataIpv6 = '[fd00:ec2::254]';
/** An answer larger than this is not a metadata answer (Azure's instance document is a few KiB). */
export const maxMetadataBytes = 64 * 1024;
const defaultTimeoutMs = 5000;

/** `region/zone`, or why there is none. Never throws. */
export async function platformLocality(input: PlatformLocalityInput): Promise<PlatformLocality | undefined> {
  const signal = timeoutSignal(input.timeoutMs ?? defaultTimeoutMs);
  try {
    if (input.cloudPlatform === 'gcp') return await gcpLocality(metadataBase(input), input.gcpZone, signal);
    if (input.cloudPlatform === 'aws') return await awsLocality(metadataBase(input), signal);
    if (input.cloudPlatform === 'azure') return await azureLocality(metadataBase(input), signal);
    // Istio probes all three for a value it does not know; no probe here, so say so.
    if (input.cloudPlatform && input.cloudPlatform !== 'none') return { problem: `"${input.cloudPlatform.slice(0, 32)}" is not aws, azure, gcp or none` };
    return undefined;
  } catch (error) {
    return { problem: signal.aborted ? `no answer within ${input.timeoutMs ?? defaultTimeoutMs} ms` : (error as Error).message };
  }
}

/** The metadata server: GCE_METADATA_HOST for GCP, AWS's IPv6 address in a pod with IPv6, else the link-local one. */
export function metadataBase(input: PlatformLocalityInput): string {
  if (input.base) return input.base;
  if (input.cloudPlatform === 'gcp') return `http://${input.gceMetadataHost || metadataIp}`;
  return `http://${input.cloudPlatform === 'aws' && input.ipv6 ? awsMetadataIpv6 : metadataIp}`;
}

/** GCP: GCP_ZONE, else the metadata server's `projects/<n>/zones/<zone>`; the region is the zone without its last part. */
async function gcpLocality(base: string, gcpZone: string | undefined, signal: AbortSignal): Promise<PlatformLocality> {
  const zone = gcpZone || (await metadataCall(`${base}/computeMetadata/v1/instance/zone`, { 'Metadata-Flavor': 'Google' }, signal)).split('/').pop()!;
  const region = /^([^-]+-[^-]+)-[^-]+$/.exec(zone)?.[1];
  return region ? localityOf(region, zone) : { problem: `zone "${zone.slice(0, 64)}" names no region` };
}

/** AWS: an IMDSv2 token, then the placement's region and availability zone. */
async function awsLocality(base: string, signal: AbortSignal): Promise<PlatformLocality> {
  const token = await metadataCall(`${base}/latest/api/token`, { 'X-aws-ec2-metadata-token-ttl-seconds': '60' }, signal, 'PUT');
  const headers = { 'X-aws-ec2-metadata-token': token };
  const region = await metadataCall(`${base}/latest/meta-data/placement/region`, headers, signal);
  const zone = await metadataCall(`${base}/latest/meta-data/placement/availability-zone`, headers, signal);
  return localityOf(region, zone);
}

/** Azure: the instance document's compute.location and compute.zone. */
async function azureLocality(base: string, signal: AbortSignal): Promise<PlatformLocality> {
  const text = await metadataCall(`${base}/metadata/instance?api-version=2019-08-15`, { Metadata: 'True' }, signal);
  const compute = (JSON.parse(text) as { compute?: { location?: unknown; zone?: unknown } }).compute ?? {};
  return localityOf(compute.location, compute.zone);
}

/** Names that fit a locality part: no `/`, nothing a label could not hold. */
function localityOf(region: unknown, zone: unknown): PlatformLocality {
  const part = (value: unknown) => (typeof value === 'string' && /^[A-Za-z0-9._-]{0,63}$/.test(value) ? value : undefined);
  const [r, z] = [part(region), part(zone)];
  if (!r) return { problem: 'the metadata server gave no region' };
  return { locality: z ? `${r}/${z}` : r };
}

/** One request, its body as text; a status other than 200, a body over maxMetadataBytes, or the deadline throws. */
export function metadataCall(url: string, headers: Record<string, string>, signal: AbortSignal, method = 'GET'): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent: false, signal }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxMetadataBytes) request.destroy(new Error(`${url}: answer over ${maxMetadataBytes} bytes`));
        else chunks.push(chunk);
      });
      response.on('end', () => {
        if (response.statusCode === 200) resolve(Buffer.concat(chunks).toString('utf8').trim());
        else reject(new Error(`${url}: status ${response.statusCode}`));
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

/** The platform's locality only where no pod label gives one, as Istio's bootstrap asks it; IPv6 when INSTANCE_IPS has a routable one. */
export async function localityBesideLabels(metadata: Record<string, unknown>, input: PlatformLocalityInput): Promise<PlatformLocality | undefined> {
  if (localityFromLabels(metadata.LABELS as Record<string, string> | undefined) !== undefined) return undefined;
  return platformLocality({ ipv6: routableIpv6In(metadata.INSTANCE_IPS), ...input });
}

/** INSTANCE_IPS (comma-separated) holds an IPv6 address that is not link-local (fe80::/10). */
export function routableIpv6In(instanceIps: unknown): boolean {
  const ips = typeof instanceIps === 'string' ? instanceIps.split(',') : [];
  return ips.some((ip) => isIP(ip.trim()) === 6 && !/^fe[89ab]/i.test(ip.trim()));
}
