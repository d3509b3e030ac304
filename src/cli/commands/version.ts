import { Command } from 'commander';
import { agentVersion } from '../../shared/version.ts';
import type { CommandContext } from '../context.ts';

/** `pilot-agent version`: prints the agent's version. */
export function versionCommand(context: CommandContext): Command {
  return new Command('version')
    .description('Print the agent version')
    .action(() => {
      context.stdout.write(`pilot-agent ${agentVersion()}\n`);
    });
}
