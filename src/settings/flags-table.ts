import type { FlagSetting } from './setting.ts';

/** The README's row of one visible flag: name, default, env var, help. */
export function renderFlagRow(spec: FlagSetting): string {
  const defaultText = spec.default === '' || spec.default === undefined ? '""' : `\`${spec.default}\``;
  return `| \`--${spec.flag}\` | ${defaultText} | ${spec.env ? `\`${spec.env}\`` : ''} | ${spec.description.replace(/\|/g, '\\|')} |`;
}

/** The README's flag table, header included, from the rows (hidden flags left out). */
export function renderFlagsTable(specs: readonly FlagSetting[]): string[] {
  return ['| flag | default | env | meaning |', '|---|---|---|---|', ...specs.filter((spec) => !spec.hidden).map(renderFlagRow)];
}
