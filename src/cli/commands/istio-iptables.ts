import { Command, Option } from 'commander';
import { gatherFlags, resolveCaptureConfig, resolveRunConfig, type CaptureConfig, type RunConfig } from '../../iptables/config.ts';
import { iptablesFlags } from '../../iptables/flags.ts';
import { decideIpv6, localAddresses, lookupUid } from '../../iptables/host.ts';
import type { CapturePlan, HostFacts } from '../../iptables/plan.ts';
import { badFile } from '../../shared/errors.ts';
import type { CommandContext } from '../context.ts';
import { dnsServers, mixedLine, toolExec, type Surroundings } from './capture-host.ts';
import { captureNft } from './istio-nftables.ts';

/**
 * `pilot-agent istio-iptables`: the traffic capture of Istio's proxy_init.
 * Every flag of Istio's is implemented under its short and long name and
 * env var (src/iptables/flags.ts), or refused with exit 2 naming it.
 */
export function istioIptablesCommand(context: CommandContext): Command {
  const command = new Command('istio-iptables').description('Install the iptables rules that send pod traffic through the proxy');
  for (const flag of iptablesFlags) {
    const names = `${flag.short ? `-${flag.short}, ` : ''}--${flag.long}`;
    const env = flag.env ? ` (env ${[flag.env, flag.alsoEnv].filter(Boolean).join(', ')})` : '';
    command.addOption(new Option(`${names} ${flag.kind === 'bool' ? '[bool]' : '<value>'}`, `${flag.help}${env}; default "${flag.default}"`));
  }
  // Logging style only: we log a few lines to stderr whatever they say.
  command.addOption(new Option('--log_output_level <levels>').hideHelp());
  command.addOption(new Option('--log_as_json [bool]').hideHelp());
  command.action(async (_options: unknown, self: Command) => {
    await runIstioIptables(cliValues(self), context);
  });
  return command;
}

/** The flags given on the command line, by long name; `--x` alone is "true". */
function cliValues(command: Command): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const flag of iptablesFlags) {
    const option = command.options.find((candidate) => candidate.long === `--${flag.long}`)!;
    const value: unknown = command.getOptionValue(option.attributeName());
    if (value !== undefined) values[flag.long] = value === true ? 'true' : String(value);
  }
  return values;
}

/** Checks every flag before touching the host; a dry run only prints. */
export async function runIstioIptables(cli: Readonly<Record<string, string | undefined>>, context: CommandContext): Promise<void> {
  const note = (line: string) => context.stderr.write(`pilot-agent istio-iptables: ${line}\n`);
  const given = gatherFlags(cli, context.env);
  const run = resolveRunConfig(given);
  const config = resolveCaptureConfig(given, context.env, (name) => lookupUid(name));
  const ipv6 = decideIpv6(localAddresses(), config.dualStack);
  if (!run.skipRuleApply) await (run.nativeNftables ? captureNft : capture)(config, run, { ipv6, note, context });
  if (run.runValidation) await validate(config, run, { ipv6, note, context });
}

async function capture(config: CaptureConfig, run: RunConfig, { ipv6, note, context }: Surroundings): Promise<void> {
  // Loaded on use, so the sidecar's `proxy` command never carries the rule builder.
  const { buildCapturePlan, dnsPlan } = await import('../../iptables/rules.ts');
  const host: HostFacts = { ipv6: ipv6.mode, ...dnsServers(config) };
  const plan = buildCapturePlan(config, host);
  if (config.redirectDns && !dnsPlan(config, host).enabled)
    note('--redirect-dns is set, but /etc/resolv.conf names no server and --capture-all-dns is off: DNS is not captured');
  if (ipv6.mode === 'reject' && plan.v6.length > 0) {
    note(
      `the pod has IPv6 address ${ipv6.address} but dual stack is off (ISTIO_DUAL_STACK): IPv6 is not captured, so new inbound IPv6 connections to ` +
        `the captured ports are reset rather than reach the app without the sidecar; outbound IPv6 is left alone`,
    );
  }
  if (run.dryRun) return printPlan(plan, context);
  const { applyRules, binariesFor, hasBinary, removeRules } = await import('../../iptables/apply.ts');
  const exec = toolExec;
  const v4 = binariesFor('v4', run.binaryVariant);
  const v6 = binariesFor('v6', run.binaryVariant);
  if (!(await hasBinary(v4.restore, exec))) throw badFile(v4.restore, 'not found or does not run; it is needed to write the capture rules');
  const v6Needed = plan.v6.length > 0;
  if (v6Needed && !(await hasBinary(v6.restore, exec))) {
    throw badFile(v6.restore, `not found or does not run; the pod's IPv6 address ${ipv6.address} needs IPv6 rules (install ip6tables)`);
  }
  const options = { exec, reconcile: run.reconcile, forceApply: run.forceApply };
  if (run.cleanupOnly) {
    note(`IPv4 rules: ${await removeRules(plan.v4, { ...options, binaries: v4 })}`);
    if (v6Needed || (await hasBinary(v6.restore, exec))) note(`IPv6 rules: ${await removeRules(plan.v6, { ...options, binaries: v6 })}`);
    return;
  }
  const outcomes = [`IPv4 rules: ${await applyRules(plan.v4, { ...options, binaries: v4 })}`];
  if (v6Needed) outcomes.push(`IPv6 rules (${ipv6.mode}): ${await applyRules(plan.v6, { ...options, binaries: v6 })}`);
  const { configureRoutes } = await import('../../iptables/routes.ts');
  await configureRoutes(config, ipv6.mode === 'capture', exec);
  note(outcomes.join('; '));
  const { nftTablesPresent } = await import('../../nftables/apply.ts');
  const native = await nftTablesPresent(exec);
  if (native.length > 0) note(mixedLine(native.map((table) => `nftables inet ${table}`), '`istio-iptables --native-nftables --cleanup-only`'));
}

/** --dry-run: the rules as iptables-restore input, written nowhere. */
async function printPlan(plan: CapturePlan, context: CommandContext): Promise<void> {
  const { renderRestoreInput } = await import('../../iptables/render.ts');
  context.stdout.write(`# iptables-restore --noflush\n${renderRestoreInput(plan.v4)}`);
  if (plan.v6.length > 0) context.stdout.write(`# ip6tables-restore --noflush\n${renderRestoreInput(plan.v6)}`);
}

/** Istio's validation exit code: the pod is not ready for the mesh. */
export const validationExitCode = 126;

async function validate(config: CaptureConfig, run: RunConfig, { ipv6, note, context }: Surroundings): Promise<void> {
  const { validateCapture } = await import('../../iptables/validation.ts');
  const passed = await validateCapture({
    ipv6: ipv6.firstIsIpv6,
    outboundCapturePort: config.outboundCapturePort,
    inboundCapturePort: config.inboundCapturePort,
    probePort: run.probePort,
    timeoutMs: run.probeTimeoutMs,
  });
  if (passed) {
    note('validation passed: connections are redirected to the proxy');
    return;
  }
  note(
    `validation failed: a connection to 127.0.0.6:${run.probePort} did not reach the capture ports within ${run.probeTimeoutMs} ms; the pod is not ` +
      `ready for the mesh (with Istio CNI: the node's CNI agent has not set up this pod)`,
  );
  context.exitCode = validationExitCode;
}
