import { declareSettings } from './setting.ts';
import { workingDirPath } from './settle-values.ts';

/** `pilot-agent proxy` settings, part of `proxySettings`: the node: its registry, identity, working folders and Envoy binary. */
export const nodeSettings = declareSettings([
  {
    flag: 'serviceregistry',
    key: 'registry',
    value: '<name>',
    default: 'Kubernetes',
    choices: ['Kubernetes', 'Consul', 'Other'],
    description: 'Service registry that decides how IP, ID and domain are derived: Kubernetes, Consul or Other',
  },
  { flag: 'ip', value: '<address>', default: '', description: 'Proxy IP address; derived from the registry when empty' },
  { flag: 'id', value: '<id>', default: '', description: 'Proxy unique ID; derived from the registry when empty' },
  { flag: 'domain', value: '<domain>', default: '', description: 'DNS domain suffix; derived from the registry when empty' },
  {
    flag: 'configPath',
    proxyConfig: 'configPath',
    value: '<dir>',
    default: './etc/istio/proxy',
    settle: workingDirPath,
    description:
      'Directory for the rendered bootstraps (envoy-rev<epoch>.json) and the XDS socket; created 0700 when absent, an existing one keeps its mode ' +
        '(a warning when others may enter it)',
  },
  {
    flag: 'binaryPath',
    proxyConfig: 'binaryPath',
    value: '<file>',
    default: '/usr/local/bin/envoy',
    env: 'ENVOY_BIN',
    description: 'Path to the Envoy binary',
  },
  { flag: 'serviceCluster', proxyConfig: 'serviceCluster', value: '<name>', default: 'istio-proxy', description: 'Service cluster (node.cluster)' },
]);
