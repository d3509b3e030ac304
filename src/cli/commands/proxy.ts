import { Argument, Command } from 'commander';
import { proxyTypes } from '../../settings/proxy-type.ts';
import type { CommandContext } from '../context.ts';
import { checkResolvedConfig } from '../preflight.ts';
import { ignoredFlags, proxyFlags, toOption, unimplementedFlags } from '../proxy-flags.ts';
import { parseTypeWord, splitProxyArgs } from '../proxy-type.ts';
import { readAgentInputs } from '../../settings/agent-inputs.ts';

/** `pilot-agent proxy <sidecar|router|ingress>`: the sidecar's entry point. */
export function proxyCommand(context: CommandContext): Command {
  const command = new Command('proxy')
    .description('Render the Envoy bootstrap, run Envoy through hot restarts and serve its status')
    // The choices for help; an unknown flag in the type's place is splitProxyArgs' to name.
    .addArgument(new Argument('[type]', 'proxy role').choices(proxyTypes).argParser(parseTypeWord).default('sidecar'))
    // As Istio's cobra command: unknown flags (an older or newer template's) are ignored, with a warning, not refused.
    .allowUnknownOption()
    .allowExcessArguments();
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  return command.action(async (_word: string, flags: Record<string, unknown>) => {
    // What commander did not take: unknown flags (and their values), the type, words past it.
    const { type, ignored } = splitProxyArgs(command.args);
    const commandLine = { values: flags, sourceOf: (name: string) => command.getOptionValueSource(name) };
    const { config, applied, proxyConfig, env, podInfo } = await readAgentInputs({
      proxyType: type,
      commandLine,
      env: context.env,
      meshConfigPath: String(flags.meshConfig),
      podInfoDir: String(flags.podInfoDir),
    });
    checkResolvedConfig(config);
    // Loaded on use: `version`, `wait` and `inject` start without the agent's runtime.
    const { runProxy } = await import('../run-proxy.ts');
    const given = (name: string) => flags[name] !== undefined;
    context.exitCode = await runProxy(config, {
      context,
      logLevel: String(flags.log_output_level),
      logAsJson: flags.log_as_json === true,
      printBootstrap: Boolean(flags.printBootstrap),
      ignoredFlags: ignoredFlags.filter(given),
      unknownArgs: ignored,
      unimplementedFlags: unimplementedFlags.filter(given),
      proxyConfig: { applied, unknown: proxyConfig.unknown, origin: proxyConfig.origin },
      env,
      mergedProxyConfig: proxyConfig.value,
      proxyMetadataSource: proxyConfig.origin.proxyMetadata,
      podInfo,
    });
  });
}
