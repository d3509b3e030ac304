import { declareEnvSettings } from './env-settings.ts';
import { bool } from './parse-values.ts';

/** Proxyless gRPC (Istio's grpc-agent template), under Istio's env names. */
export const proxylessEnv = declareEnvSettings({
  disableEnvoy: {
    env: 'DISABLE_ENVOY',
    default: 'false',
    parse: bool,
    description:
      'true: proxyless gRPC. No Envoy and no SDS server: the agent relays xDS for the app over its XDS socket, keeps OUTPUT_CERTS rotated and ' +
        'writes the gRPC bootstrap',
  },
  grpcBootstrap: {
    env: 'GRPC_XDS_BOOTSTRAP',
    description:
      'Where the agent writes the bootstrap a proxyless gRPC app reads; written when set, and with DISABLE_ENVOY=true (then ' +
        '<configPath>/grpc-bootstrap.json when unset)',
  },
});
