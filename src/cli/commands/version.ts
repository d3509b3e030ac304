import { Command, Option } from 'commander';
import { agentVersion } from '../../shared/version.ts';
import type { CommandContext } from '../context.ts';

/**
 * `pilot-agent version`: the agent's version. `--short` and `-o json|yaml`
 * print Istio's shapes (`client version: X`; `{clientVersion: {version, …}}`),
 * so scripts written for Istio's agent read ours.
 */
export function versionCommand(context: CommandContext): Command {
  return new Command('version')
    .description('Print the agent version')
    .option('-s, --short', "only the version, as Istio's `client version: X`")
    .addOption(new Option('-o, --output <format>', 'json or yaml').choices(['json', 'yaml']))
    .action((flags: { short?: boolean; output?: 'json' | 'yaml' }) => {
      context.stdout.write(versionText(flags));
    });
}

function versionText(flags: { short?: boolean; output?: 'json' | 'yaml' }): string {
  const version = agentVersion();
  const clientVersion = { version, revision: 'unknown', golang_version: `node ${process.version}`, status: 'Clean', tag: version };
  if (flags.output === 'json') return `${JSON.stringify({ clientVersion }, null, 2)}\n`;
  if (flags.output === 'yaml')
    return `clientVersion:\n${Object.entries(clientVersion)
      .map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`)
      .join('\n')}\n`;
  if (flags.short) return `client version: ${version}\n`;
  return `pilot-agent ${version}\n`;
}
