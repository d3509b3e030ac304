/**
 * One setting of `pilot-agent proxy`, declared once: its flag, env var,
 * ProxyConfig field, default, help and parser. Commander options, the
 * README's flag table, the ProxyConfig layering and the typed config all
 * come from these rows.
 */
export interface Setting {
  flag: string;
  /** The config field, when it is not the flag's name (e.g. drainDurationMs). */
  key?: string;
  /** Commander's value placeholder, e.g. `<duration>`; absent for booleans. */
  value?: string;
  description: string;
  /** As typed on the command line; goes through `parse` like any other source. */
  default?: string | boolean;
  /** The env var users already know for this setting, when there is one. */
  env?: string;
  /** The ProxyConfig field (dotted for nested messages) that sets it when the command line and env do not. */
  proxyConfig?: string;
  /** Text to value, for every source; throws a plain Error the source names. */
  parse?: (text: string) => unknown;
  /** The value the sources settled on to the config's; its errors name the flag. */
  settle?: (value: never, flag: string) => unknown;
  choices?: readonly string[];
  hidden?: boolean;
  /** Accepted for Istio's command lines and warned about when given: obsolete, or not implemented here. */
  ignored?: 'obsolete' | 'unimplemented';
}

/** Keeps each row's literal types (key, choices, parser results) for the derived config type. */
export const declareSettings = <const Rows extends readonly Setting[]>(rows: Rows): Rows => rows;

type KeyOf<S extends Setting> = S extends { key: infer K extends string } ? K : S['flag'];

/** A row's config type: what `settle` makes, else what `parse` makes, else one of its choices, else text. */
export type ValueOf<S extends Setting> =
  S extends { settle: (value: never, flag: string) => infer T } ? T
  : S extends { parse: (text: string) => infer P } ? P
  : S extends { choices: readonly (infer C)[] } ? C
  : S extends { default: boolean } ? boolean
  : string;

/** The typed config of a table of rows, keyed by config field. */
export type SettingValues<Rows extends readonly Setting[]> = { [S in Rows[number] as KeyOf<S>]: ValueOf<S> };

export const keyOf = (setting: Setting): string => setting.key ?? setting.flag;

/** The name commander stores a flag's value under (`print-bootstrap` → `printBootstrap`). */
export const attributeOf = (setting: Setting): string => setting.flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** The declared default as a value, parsed as any source's text is. */
export function defaultOf(setting: Setting): unknown {
  if (typeof setting.default !== 'string' || !setting.parse) return setting.default;
  return setting.parse(setting.default);
}

/** The config's value from what the sources settled on; nothing set: the default. */
export function settleSetting(setting: Setting, value: unknown): unknown {
  const settled = value ?? defaultOf(setting);
  return setting.settle ? (setting.settle as (value: unknown, flag: string) => unknown)(settled, setting.flag) : settled;
}
