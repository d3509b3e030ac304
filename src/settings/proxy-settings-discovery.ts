import { certFileNames, istioRootCertPath, istioTokenPath } from '../shared/istio-files.ts';
import { declareSettings } from './setting.ts';
import { emptyIsUnset, workingDirPath } from './settle-values.ts';
import { port } from './parse-values.ts';

/** `pilot-agent proxy` settings, part of `proxySettings`: the dial to the discovery server (its name, token and root), and the pod's downward-API folder. */
export const discoverySettings = declareSettings([
  {
    flag: 'xdsServerName',
    value: '<name>',
    default: '',
    env: 'ISTIOD_SAN',
    settle: emptyIsUnset,
    description: 'TLS server name expected of the discovery server (TLS or MUTUAL_TLS); the host of --discoveryAddress when empty',
  },
  {
    flag: 'xdsTokenFile',
    value: '<file>',
    default: '',
    settle: emptyIsUnset,
    description: `File whose content the agent sends to the discovery server as \`authorization: Bearer\`, read again for every new stream; with ` +
      `TLS to istiod, ${istioTokenPath} when empty`,
  },
  {
    flag: 'xdsRootCa',
    value: '<file>',
    default: '',
    env: 'XDS_ROOT_CA',
    settle: emptyIsUnset,
    description: `Root certificate the discovery server's TLS certificate must chain to; setting it (or a --discoveryAddress on port 15012, ` +
      `istiod's TLS port) makes the agent speak TLS to it with a token; SYSTEM: the OS trust store; when empty, ${certFileNames.root} in --certDir ` +
      `if there, else ${istioRootCertPath}`,
  },
  {
    flag: 'podInfoDir',
    value: '<dir>',
    default: './etc/istio/pod',
    settle: workingDirPath,
    description: "Downward-API directory whose `labels` and `annotations` files become the node's LABELS and ANNOTATIONS",
  },
]);
