// Prints the README's table of `pilot-agent proxy` flags from the settings' rows.
import { proxyFlags } from '../src/cli/proxy-flags.ts';
import { renderFlagsTable } from '../src/settings/flags-table.ts';

process.stdout.write(renderFlagsTable(proxyFlags).join('\n') + '\n');
