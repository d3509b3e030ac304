/**
 * Every flag of `istio-iptables`, declared once: Istio's short and long
 * names, the env var Istio binds to it (the long name upper-cased, `-` as
 * `_`), the extra env var some of them also read, and the default. The
 * command builds its options from this table and docs/traffic-capture.md lists it.
 */
export interface IptablesFlag {
  /** Long name without the dashes, as Istio spells it. */
  long: string;
  short?: string;
  /** Boolean flags take `--x`, `--x=true`, `--x=false`. */
  kind: 'string' | 'bool';
  /** Istio binds it (`-p` alone has none). */
  env?: string;
  /** Read after `env`, so it wins over it (Istio's AdditionalEnv). */
  alsoEnv?: string;
  default: string;
  help: string;
}

const envOf = (long: string) => long.toUpperCase().replace(/-/g, '_');

type Declared = Omit<IptablesFlag, 'env'> & { noEnv?: boolean };

const declared: readonly Declared[] = [
  { long: 'envoy-port', short: 'p', kind: 'string', default: '15001', help: 'outbound capture port', noEnv: true },
  { long: 'inbound-capture-port', short: 'z', kind: 'string', default: '15006', help: 'inbound capture port' },
  { long: 'inbound-tunnel-port', short: 'e', kind: 'string', default: '15008', help: 'tunnel port, never captured inbound' },
  {
    long: 'proxy-uid',
    short: 'u',
    kind: 'string',
    default: '',
    help: 'UIDs of the proxy, comma-separated, whose traffic is not captured (default: ENVOY_USER, else 1337)',
  },
  { long: 'proxy-gid', short: 'g', kind: 'string', default: '', help: 'GIDs of the proxy (default: the UIDs)' },
  { long: 'istio-inbound-interception-mode', short: 'm', kind: 'string', default: '', help: 'inbound interception: REDIRECT or TPROXY (empty: REDIRECT)' },
  { long: 'istio-inbound-ports', short: 'b', kind: 'string', default: '', help: "inbound ports to capture, comma-separated, or '*'" },
  { long: 'istio-local-exclude-ports', short: 'd', kind: 'string', default: '', help: "inbound ports not to capture (with -b '*')" },
  { long: 'istio-exclude-interfaces', short: 'c', kind: 'string', default: '', help: 'interfaces whose traffic is captured neither way' },
  { long: 'istio-service-cidr', short: 'i', kind: 'string', default: '', help: "outbound IPv4/IPv6 ranges to capture, or '*'" },
  { long: 'istio-service-exclude-cidr', short: 'x', kind: 'string', default: '', help: 'outbound IPv4/IPv6 ranges not to capture' },
  { long: 'istio-outbound-ports', short: 'q', kind: 'string', default: '', help: 'outbound ports always captured, whatever the range' },
  { long: 'istio-local-outbound-ports-exclude', short: 'o', kind: 'string', default: '', help: 'outbound ports not to capture' },
  { long: 'kube-virt-interfaces', short: 'k', kind: 'string', default: '', help: 'virtual interfaces whose inbound traffic is captured as outbound' },
  { long: 'istio-inbound-tproxy-mark', short: 't', kind: 'string', default: '1337', help: 'TPROXY packet mark' },
  { long: 'istio-inbound-tproxy-route-table', short: 'r', kind: 'string', default: '133', help: 'TPROXY routing table' },
  { long: 'dry-run', short: 'n', kind: 'bool', default: 'false', help: 'print the rules instead of applying them' },
  { long: 'iptables-probe-port', kind: 'string', default: '15002', help: 'port the validation connects to' },
  { long: 'probe-timeout', kind: 'string', default: '5s', help: 'how long the validation waits (Go duration)' },
  { long: 'skip-rule-apply', kind: 'bool', default: 'false', help: 'apply nothing (Istio CNI applied the rules)' },
  { long: 'run-validation', kind: 'bool', default: 'false', help: 'check that the rules redirect; exit 126 when not' },
  { long: 'redirect-dns', kind: 'bool', alsoEnv: 'ISTIO_META_DNS_CAPTURE', default: 'false', help: "send the app's DNS (port 53) to the agent on 15053" },
  { long: 'capture-all-dns', kind: 'bool', default: 'false', help: 'with --redirect-dns: every server, not only those of /etc/resolv.conf' },
  { long: 'drop-invalid', kind: 'bool', alsoEnv: 'INVALID_DROP', default: 'false', help: 'drop packets conntrack finds invalid' },
  { long: 'dual-stack', kind: 'bool', alsoEnv: 'ISTIO_DUAL_STACK', default: 'false', help: 'capture IPv6 as IPv4 whenever the pod has an IPv6 address' },
  { long: 'reconcile', kind: 'bool', default: 'false', help: 'replace rules of an earlier run that differ' },
  { long: 'cleanup-only', kind: 'bool', default: 'false', help: 'remove the capture rules and add none' },
  { long: 'force-apply', kind: 'bool', default: 'false', help: 'rewrite the rules even when they are in place' },
  { long: 'force-iptables-binary', kind: 'string', default: '', help: 'legacy or nft: use iptables-legacy or iptables-nft (default: iptables)' },
  { long: 'network-namespace', kind: 'string', default: '', help: 'not supported: run inside the pod network namespace' },
  { long: 'cni-mode', kind: 'bool', default: 'false', help: 'not supported: run inside the pod network namespace' },
  { long: 'native-nftables', kind: 'bool', default: 'false', help: 'write the capture as nftables tables (nft) instead of iptables rules' },
];

export const iptablesFlags: readonly IptablesFlag[] = declared.map(({ noEnv, ...flag }) => (noEnv ? flag : { ...flag, env: envOf(flag.long) }));

/**
 * Settings Istio reads from the environment only (tools/common/config):
 * no flag, the same names.
 */
export const iptablesEnvOnly = {
  loopbackCidr: { env: 'ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR', default: '127.0.0.1/32', help: 'loopback range the app uses for itself' },
  ownerGroups: { env: 'ISTIO_OUTBOUND_OWNER_GROUPS', default: '*', help: "groups whose outbound traffic is captured ('*': all)" },
  ownerGroupsExclude: { env: 'ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE', default: '', help: "groups not captured (with '*')" },
  envoyUser: { env: 'ENVOY_USER', default: 'istio-proxy', help: 'user whose UID is the default of -u' },
} as const;

/** Flags given as text: `--x` alone is "true" for booleans. */
export type FlagValues = Readonly<Record<string, string>>;

/** The flag's row of the istio-iptables table in docs/traffic-capture.md. */
export function renderIptablesFlagRow(flag: IptablesFlag): string {
  const names = [flag.short ? `\`-${flag.short}\`` : '', `\`--${flag.long}\``].filter(Boolean).join(', ');
  const env = [flag.env, flag.alsoEnv].filter((name) => name !== undefined).map((name) => `\`${name}\``).join(', ');
  const fallback = flag.default === '' ? '' : `\`${flag.default}\``;
  return `| ${names} | ${env} | ${fallback} | ${flag.help.replace(/\|/g, '\\|')} |`;
}

/** The docs row of an env-only setting. */
export function renderIptablesEnvRow(setting: { env: string; default: string; help: string }): string {
  return `| | \`${setting.env}\` | ${setting.default === '' ? '' : `\`${setting.default}\``} | ${setting.help} |`;
}
