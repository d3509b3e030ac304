import { Option, type Command } from 'commander';
import type { CommandContext } from '../context.ts';

/**
 * The rest of Istio's `istio-iptables` flags (tools/istio-iptables/pkg/cmd),
 * so the init container of today's injection template runs. Those that do
 * not change what we do are silent; the others warn once, naming the flag.
 */
interface CompatFlag {
  flags: string;
  /** Takes a value (`-q 80,443`); otherwise a Go-style boolean (`--x`, `--x=false`). */
  value?: string;
  /** Accepted silently: logging style, or what we always do anyway. */
  silent?: boolean;
}

const compatFlags: readonly CompatFlag[] = [
  { flags: '--log_output_level', value: '<levels>', silent: true },
  { flags: '--log_as_json', silent: true },
  // We always write the full rule set with iptables-restore.
  { flags: '--force-apply', silent: true },
  { flags: '-q, --istio-outbound-ports', value: '<ports>' },
  { flags: '-k, --kube-virt-interfaces', value: '<interfaces>' },
  { flags: '-c, --istio-exclude-interfaces', value: '<interfaces>' },
  { flags: '-t, --istio-inbound-tproxy-mark', value: '<mark>' },
  { flags: '-r, --istio-inbound-tproxy-route-table', value: '<table>' },
  { flags: '--inbound-tunnel-port', value: '<port>' },
  { flags: '--iptables-probe-port', value: '<port>' },
  { flags: '--probe-timeout', value: '<duration>' },
  { flags: '--network-namespace', value: '<path>' },
  { flags: '--force-iptables-binary', value: '<binary>' },
  ...['run-validation', 'redirect-dns', 'drop-invalid', 'dual-stack', 'capture-all-dns', 'cni-mode', 'reconcile', 'cleanup-only', 'native-nftables', 'iptables-trace-logging'].map((name) => ({ flags: `--${name}` })),
];

/** Adds the compatibility flags, hidden from help. */
export function addIptablesCompatOptions(command: Command): Command {
  for (const flag of compatFlags) {
    command.addOption(new Option(`${flag.flags} ${flag.value ?? '[bool]'}`).hideHelp());
  }
  return command;
}

/** One warning line per unimplemented flag that was given. */
export function warnUnimplementedIptablesFlags(command: Command, context: CommandContext): void {
  for (const option of command.options) {
    const flag = compatFlags.find((candidate) => candidate.flags === option.flags.replace(/ [<[].*$/, ''));
    const value: unknown = command.getOptionValue(option.attributeName());
    // `--x=false` asks for nothing we lack.
    if (!flag || flag.silent || value === undefined || (flag.value === undefined && /^(false|0)$/i.test(String(value)))) continue;
    context.stderr.write(`pilot-agent istio-iptables: warning: ${option.long} is accepted for Istio compatibility but not implemented; ignored\n`);
  }
}
