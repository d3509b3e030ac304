import { isIPv4 } from 'node:net';
import { AgentError, badFlag } from '../shared/errors.ts';
import { goBool } from '../settings/parse-values.ts';
import { iptablesEnvOnly, iptablesFlags, type IptablesFlag } from './flags.ts';
import {
  isLoopbackCidr,
  parseCidrSelection,
  parseGroupList,
  parseInterfaces,
  parseOwnerIds,
  parsePort,
  parsePortList,
  parsePortSelection,
  type CidrLists,
  type CidrSelection,
  type PortSelection,
} from './ports.ts';

/** One setting's text and the name an error line gives it (`-b`, or `env ISTIO_INBOUND_PORTS`). */
export interface Given {
  text: string;
  name: string;
}

/** Every flag by long name, after the command line and the environment were read. */
export type GivenFlags = Readonly<Record<string, Given>>;

/** What the rule builder needs, every value checked. */
export interface CaptureConfig {
  outboundCapturePort: number;
  inboundCapturePort: number;
  inboundTunnelPort: number;
  proxyUids: readonly string[];
  proxyGids: readonly string[];
  mode: 'REDIRECT' | 'TPROXY';
  tproxyMark: number;
  tproxyRouteTable: number;
  inboundPorts: PortSelection;
  excludedInboundPorts: readonly number[];
  includedOutboundCidrs: CidrSelection;
  excludedOutboundCidrs: CidrLists;
  includedOutboundPorts: readonly number[];
  excludedOutboundPorts: readonly number[];
  virtualInterfaces: readonly string[];
  excludedInterfaces: readonly string[];
  redirectDns: boolean;
  captureAllDns: boolean;
  dropInvalid: boolean;
  dualStack: boolean;
  /** The app's own loopback range (ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR). */
  loopbackCidr: string;
  /** Whose outbound traffic is captured: all groups but `values`, or only `values`. */
  ownerGroups: { except: boolean; values: readonly string[] };
}

/** How to run, apart from the rules themselves. */
export interface RunConfig {
  dryRun: boolean;
  skipRuleApply: boolean;
  runValidation: boolean;
  reconcile: boolean;
  cleanupOnly: boolean;
  forceApply: boolean;
  /** '' (iptables), 'legacy' or 'nft'. */
  binaryVariant: '' | 'legacy' | 'nft';
  /** --native-nftables: the capture as nftables tables (src/nftables/) instead of iptables rules. */
  nativeNftables: boolean;
  probePort: number;
  probeTimeoutMs: number;
}

/** Looks a user up by name (in /etc/passwd); undefined when there is none. */
export type UserLookup = (name: string) => string | undefined;

/**
 * Takes each flag from the command line, else from its env vars (the
 * `alsoEnv` one wins, as in Istio), else its default.
 */
export function gatherFlags(
  cli: Readonly<Record<string, string | undefined>>,
  env: NodeJS.ProcessEnv,
  flags: readonly IptablesFlag[] = iptablesFlags,
): GivenFlags {
  const given: Record<string, Given> = {};
  for (const flag of flags) {
    const fromCli = cli[flag.long];
    const envName = [flag.alsoEnv, flag.env].find((name) => name !== undefined && env[name] !== undefined);
    given[flag.long] =
      fromCli !== undefined ? { text: fromCli, name: flag.short ? `-${flag.short}` : `--${flag.long}` }
      : envName !== undefined ? { text: env[envName]!, name: `env ${envName}` }
      : { text: flag.default, name: `--${flag.long}` };
  }
  return given;
}

/** Go's strconv.ParseBool, which Istio's flags use. */
export function parseBool(given: Given): boolean {
  const value = goBool(given.text.trim());
  if (value !== undefined) return value;
  throw badFlag(given.name, `"${given.text}" is not true or false`);
}

/** Checks the flags; throws a usage error naming the flag (or env var) at fault. */
export function resolveCaptureConfig(flags: GivenFlags, env: NodeJS.ProcessEnv = {}, lookupUser: UserLookup = () => undefined): CaptureConfig {
  const get = (long: string) => flags[long] ?? { text: '', name: `--${long}` };
  const bool = (long: string) => parseBool(get(long));
  rejectUnsupported(get, bool);
  const uids = proxyUids(get('proxy-uid'), env, lookupUser);
  const gids = get('proxy-gid').text.trim() === '' ? uids : parseOwnerIds(get('proxy-gid').name, get('proxy-gid').text);
  const excluded = parseCidrSelection(get('istio-service-exclude-cidr').name, get('istio-service-exclude-cidr').text);
  if (excluded === '*') throw badFlag(get('istio-service-exclude-cidr').name, `"*" would exclude everything; leave -i empty instead`);
  const config: CaptureConfig = {
    outboundCapturePort: port(get('envoy-port')),
    inboundCapturePort: port(get('inbound-capture-port')),
    inboundTunnelPort: port(get('inbound-tunnel-port')),
    proxyUids: uids,
    proxyGids: gids,
    mode: mode(get('istio-inbound-interception-mode')),
    tproxyMark: integer(get('istio-inbound-tproxy-mark'), 1, 0xffffffff),
    tproxyRouteTable: integer(get('istio-inbound-tproxy-route-table'), 1, 0xfffffffe),
    inboundPorts: parsePortSelection(get('istio-inbound-ports').name, get('istio-inbound-ports').text),
    excludedInboundPorts: parsePortList(get('istio-local-exclude-ports').name, get('istio-local-exclude-ports').text),
    includedOutboundCidrs: parseCidrSelection(get('istio-service-cidr').name, get('istio-service-cidr').text),
    excludedOutboundCidrs: excluded,
    includedOutboundPorts: parsePortList(get('istio-outbound-ports').name, get('istio-outbound-ports').text),
    excludedOutboundPorts: parsePortList(get('istio-local-outbound-ports-exclude').name, get('istio-local-outbound-ports-exclude').text),
    virtualInterfaces: parseInterfaces(get('kube-virt-interfaces').name, get('kube-virt-interfaces').text),
    excludedInterfaces: parseInterfaces(get('istio-exclude-interfaces').name, get('istio-exclude-interfaces').text),
    redirectDns: bool('redirect-dns'),
    captureAllDns: bool('capture-all-dns'),
    dropInvalid: bool('drop-invalid'),
    dualStack: bool('dual-stack'),
    loopbackCidr: loopbackCidr(env),
    ownerGroups: ownerGroups(env),
  };
  checkInboundConflicts(config.inboundPorts, config.excludedInboundPorts, {
    include: get('istio-inbound-ports').name,
    exclude: get('istio-local-exclude-ports').name,
  });
  return config;
}

/** The run options; checked with the rest so a bad one changes nothing. */
export function resolveRunConfig(flags: GivenFlags): RunConfig {
  const get = (long: string) => flags[long] ?? { text: '', name: `--${long}` };
  const bool = (long: string) => parseBool(get(long));
  const variant = get('force-iptables-binary');
  if (!['', 'legacy', 'nft'].includes(variant.text.trim())) throw badFlag(variant.name, `"${variant.text}" is not legacy or nft`);
  const run: RunConfig = {
    dryRun: bool('dry-run'),
    skipRuleApply: bool('skip-rule-apply'),
    runValidation: bool('run-validation'),
    reconcile: bool('reconcile'),
    cleanupOnly: bool('cleanup-only'),
    forceApply: bool('force-apply'),
    binaryVariant: variant.text.trim() as RunConfig['binaryVariant'],
    nativeNftables: bool('native-nftables'),
    probePort: port(get('iptables-probe-port')),
    probeTimeoutMs: goDuration(get('probe-timeout')),
  };
  if (run.nativeNftables && run.binaryVariant !== '')
    throw badFlag(variant.name, `chooses an iptables binary, but --native-nftables writes no iptables rule; give one or the other`);
  return run;
}

/** Flags of Istio's that cannot apply here: refused by name rather than ignored. */
function rejectUnsupported(get: (long: string) => Given, bool: (long: string) => boolean): void {
  if (get('network-namespace').text.trim() !== '') {
    throw badFlag(get('network-namespace').name, 'is not supported: run istio-iptables inside the pod network namespace');
  }
  if (bool('cni-mode')) throw badFlag(get('cni-mode').name, 'is not supported: run istio-iptables inside the pod network namespace');
}

function port(given: Given): number {
  return parsePort(given.name, given.text);
}

function integer(given: Given, min: number, max: number): number {
  const value = /^\d+$/.test(given.text.trim()) ? Number(given.text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw badFlag(given.name, `"${given.text}" is not an integer from ${min} to ${max}`);
  return value;
}

function mode(given: Given): CaptureConfig['mode'] {
  const text = given.text.trim();
  if (text === '' || text === 'REDIRECT') return 'REDIRECT';
  if (text === 'TPROXY') return 'TPROXY';
  throw badFlag(given.name, `interception mode "${given.text}" is not REDIRECT or TPROXY`);
}

/** Like Istio: no -u means the UID of ENVOY_USER, else 1337. */
function proxyUids(given: Given, env: NodeJS.ProcessEnv, lookupUser: UserLookup): string[] {
  if (given.text.trim() !== '') return parseOwnerIds(given.name, given.text);
  const user = env[iptablesEnvOnly.envoyUser.env] ?? iptablesEnvOnly.envoyUser.default;
  return [lookupUser(user) ?? '1337'];
}

function loopbackCidr(env: NodeJS.ProcessEnv): string {
  const { env: name, default: fallback } = iptablesEnvOnly.loopbackCidr;
  const text = env[name] ?? fallback;
  const [address = '', bits = ''] = text.split('/');
  const prefix = /^\d+$/.test(bits) ? Number(bits) : -1;
  if (!isIPv4(address) || !address.startsWith('127.') || prefix < 8 || prefix > 32 || !isLoopbackCidr(text)) {
    throw new AgentError('BAD_ENV', `env ${name}: "${text}" is not an IPv4 loopback CIDR with a prefix from 8 to 32`);
  }
  return `${address}/${prefix}`;
}

function ownerGroups(env: NodeJS.ProcessEnv): CaptureConfig['ownerGroups'] {
  const { ownerGroups: include, ownerGroupsExclude: exclude } = iptablesEnvOnly;
  const includeText = env[include.env] ?? include.default;
  if (includeText.trim() === '*') return { except: true, values: parseGroupList(`env ${exclude.env}`, env[exclude.env] ?? exclude.default) };
  const values = parseGroupList(`env ${include.env}`, includeText);
  // Each group is one match of a single rule; kernels cap matches per rule.
  if (values.length > 64) throw new AgentError('BAD_ENV', `env ${include.env}: ${values.length} groups, at most 64`);
  return { except: false, values };
}

/** A Go duration as Istio's --probe-timeout takes it: "5s", "1m30s", "500ms". */
export function goDuration(given: Given): number {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const text = given.text.trim();
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (text === '' || parts.map((part) => part[0]).join('') !== text) throw badFlag(given.name, `"${given.text}" is not a duration like 5s or 500ms`);
  const ms = parts.reduce((sum, part) => sum + Number(part[1]) * units[part[2]!]!, 0);
  if (ms <= 0 || ms > 3_600_000) throw badFlag(given.name, `"${given.text}" is not a duration from 1ms to 1h`);
  return ms;
}

/**
 * A port both captured and excluded is a contradiction, not a precedence
 * question. `names` says where the two lists came from, for the error line.
 */
export function checkInboundConflicts(
  include: PortSelection,
  exclude: readonly number[],
  names = { include: '-b', exclude: '-d' },
): void {
  if (include === '*') return;
  // A set: both lists come from the pod (flags, env, annotations) and may hold every port.
  const excluded = new Set(exclude);
  const clash = include.find((item) => excluded.has(item));
  if (clash !== undefined) {
    throw badFlag(names.exclude, `port ${clash} is also in the captured inbound ports (${names.include})`);
  }
}
