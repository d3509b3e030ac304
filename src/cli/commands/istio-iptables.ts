import { Command } from 'commander';
import { resolveCaptureConfig, type CaptureFlags } from '../../iptables/config.ts';
import type { CommandContext } from '../context.ts';
import { addIptablesCompatOptions, warnUnimplementedIptablesFlags } from './iptables-compat.ts';

interface IstioIptablesOptions extends CaptureFlags {
  dryRun: boolean;
  iptablesRestore: string;
}

/**
 * `pilot-agent istio-iptables`: the traffic capture of Istio's proxy_init
 * (REDIRECT mode, IPv4, nat table). Flags keep Istio's short and long names.
 */
export function istioIptablesCommand(context: CommandContext): Command {
  const command = new Command('istio-iptables')
    .description('Install the iptables rules that send pod traffic through the proxy')
    .option('-p, --envoy-port <port>', 'outbound capture port', '15001')
    .option('-z, --inbound-capture-port <port>', 'inbound capture port', '15006')
    .option('-u, --proxy-uid <uid>', 'UID of the proxy, whose traffic is not captured', '1337')
    .option('-g, --proxy-gid <gid>', 'GID of the proxy (default: the UID)')
    .option('-m, --istio-inbound-interception-mode <mode>', 'inbound interception mode (REDIRECT)', 'REDIRECT')
    .option('-b, --istio-inbound-ports <ports>', "inbound ports to capture, comma-separated, or '*'", '')
    .option('-d, --istio-local-exclude-ports <ports>', "inbound ports not to capture (with -b '*')", '')
    .option('-i, --istio-service-cidr <cidrs>', "outbound IPv4 ranges to capture, or '*'", '')
    .option('-x, --istio-service-exclude-cidr <cidrs>', 'outbound IPv4 ranges not to capture', '')
    .option('-o, --istio-local-outbound-ports-exclude <ports>', 'outbound ports not to capture', '')
    .option('--iptables-restore <path>', 'iptables-restore binary', 'iptables-restore')
    .option('-n, --dry-run', 'print the iptables-restore input instead of applying it', false)
    .option('--skip-rule-apply', 'check the flags but apply nothing (Istio CNI applied the rules already)', false)
    .action(async (_options: unknown, command: Command) => {
      warnUnimplementedIptablesFlags(command, context);
      const options = readOptions(command);
      if (command.getOptionValue('skipRuleApply') === true) return void resolveCaptureConfig(options);
      await runIstioIptables(options, context);
    });
  return addIptablesCompatOptions(command);
}

function readOptions(command: Command): IstioIptablesOptions {
  const raw = command.opts<Record<string, string | boolean | undefined>>();
  const text = (key: string) => String(raw[key] ?? '');
  return {
    envoyPort: text('envoyPort'),
    inboundCapturePort: text('inboundCapturePort'),
    proxyUid: text('proxyUid'),
    proxyGid: raw['proxyGid'] === undefined ? undefined : text('proxyGid'),
    mode: text('istioInboundInterceptionMode'),
    inboundPorts: text('istioInboundPorts'),
    excludeInboundPorts: text('istioLocalExcludePorts'),
    includeOutboundCidrs: text('istioServiceCidr'),
    excludeOutboundCidrs: text('istioServiceExcludeCidr'),
    excludeOutboundPorts: text('istioLocalOutboundPortsExclude'),
    iptablesRestore: text('iptablesRestore'),
    dryRun: raw['dryRun'] === true,
  };
}

/** Checks every flag before touching the host; a dry run only prints. */
export async function runIstioIptables(options: IstioIptablesOptions, context: CommandContext): Promise<void> {
  // Loaded on use, so the sidecar's `proxy` command never carries the rule builder.
  const [{ buildCaptureRules }, { renderRestoreInput }, { applyCaptureRules }] = await Promise.all([import('../../iptables/rules.ts'), import('../../iptables/render.ts'), import('../../iptables/apply.ts')]);
  const ruleSet = buildCaptureRules(resolveCaptureConfig(options));
  if (options.dryRun) {
    context.stdout.write(renderRestoreInput(ruleSet));
    return;
  }
  await applyCaptureRules(ruleSet, { restoreBinary: options.iptablesRestore });
}
