import { certFileNames } from '../shared/istio-files.ts';
import { declareSettings } from './setting.ts';
import { duration, durationIn, port } from './parse-values.ts';
import { workingDirPath } from './settle-values.ts';

/**
 * `pilot-agent proxy` settings, part of `proxySettings`: the agent's ports, and the certificates Envoy serves: where they are and how a change
 * reaches Envoy.
 */
export const portsCertsSettings = declareSettings([
  {
    flag: 'statusPort',
    proxyConfig: 'statusPort',
    value: '<port>',
    default: '15020',
    parse: port,
    description: "Port of the agent's status server (0 disables it)",
  },
  {
    flag: 'readinessPort',
    value: '<port>',
    default: '15021',
    parse: port,
    description: "Port of Envoy's readiness listener, which routes /healthz/ready to the status server (0: none)",
  },
  { flag: 'prometheusPort', value: '<port>', default: '15090', parse: port, description: "Port of Envoy's Prometheus listener (0: any free port)" },
  {
    flag: 'certDir',
    value: '<dir>',
    default: './etc/certs',
    env: 'CERT_DIR',
    settle: workingDirPath,
    description: `Directory of ${certFileNames.chain}, ${certFileNames.key} and ${certFileNames.root}, watched for rotation`,
  },
  {
    flag: 'ingressCertDir',
    value: '<dir>',
    default: '/etc/istio/ingress-certs',
    env: 'INGRESS_CERT_DIR',
    description: 'Directory of tls.crt and tls.key, also watched for `proxy ingress`',
  },
  {
    flag: 'certDebounce',
    key: 'certDebounceMs',
    value: '<duration>',
    default: '200ms',
    parse: duration,
    description: 'Quiet time after the last certificate file event before the files are read and Envoy hot-restarted',
  },
  {
    flag: 'certResync',
    key: 'certResyncMs',
    value: '<duration>',
    default: '10s',
    parse: durationIn({ minMs: 1000, zeroMeansOff: true }),
    description: 'Re-read the certificate files this often even without a file event, in case one was missed; at least 1s (0s: never)',
  },
  {
    flag: 'sdsSocket',
    value: '<path>',
    default: './var/run/secrets/workload-spiffe-uds/socket',
    settle: workingDirPath,
    description:
      'Unix socket of the SDS server Envoy reads certificates from (bootstrap cluster sds-grpc); when another process (SPIRE) already serves it, ' +
        'the agent serves nothing there',
  },
  {
    flag: 'certRotation',
    value: '<mode>',
    default: 'auto',
    choices: ['auto', 'sds', 'restart'],
    description:
      'How changed certificate files reach Envoy: auto (over SDS when a stream holds them, else hot restart), sds (never restart), restart (always ' +
        'hot-restart)',
  },
]);
