// Prints the README's table of `pilot-agent proxy` flags from the flag table.
import { proxyFlags } from '../src/cli/proxy-flags.ts';

const rows = proxyFlags
  .filter((spec) => !spec.hidden)
  .map((spec) => `| \`--${spec.flag}\` | ${spec.default === '' || spec.default === undefined ? '""' : `\`${spec.default}\``} | ${spec.env ? `\`${spec.env}\`` : ''} | ${spec.description.replace(/\|/g, '\\|')} |`);
process.stdout.write(['| flag | default | env | meaning |', '|---|---|---|---|', ...rows].join('\n') + '\n');
