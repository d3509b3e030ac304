/**
 * One setting, declared once, of any source: a flag (of `pilot-agent
 * proxy`), an env var, a ProxyConfig field, each optional. Commander's
 * options, the README's flag table, docs/settings.md's env table, the
 * ProxyConfig layering, the typed config (`AgentConfig`) and the typed env
 * (`AgentEnv`) all come from these rows (registry.ts lists the tables).
 */
export interface Setting {
  /** The flag of `pilot-agent proxy`, when there is one. */
  flag?: string;
  /** The config field, when it is not the flag's name (e.g. drainDurationMs). */
  key?: string;
  /** Commander's value placeholder, e.g. `<duration>`; absent for booleans. */
  value?: string;
  description: string;
  /** As typed on the command line or in the env; goes through `parse` like any other source. */
  default?: string | boolean;
  /** The env var users already know for this setting, when there is one; empty is unset. */
  env?: string;
  /** Read when `env` is unset: another name Istio uses for the same thing. */
  alsoEnv?: string;
  /** Unset is bad input, for this reason (env-only rows). */
  required?: string;
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

/** A row with a flag: commander reads it (and its env var), ProxyConfig lies under it. */
export type FlagSetting = Setting & { flag: string };

/** A row read from env only (env-settings.ts), its default as the variable would carry it. */
export type EnvSetting = Setting & { env: string; default?: string };

/** Keeps each row's literal types (key, choices, parser results) for the derived config type. */
export const declareSettings = <const Rows extends readonly FlagSetting[]>(rows: Rows): Rows => rows;

type KeyOf<S extends FlagSetting> = S extends { key: infer K extends string } ? K : S['flag'];

/** A row's config type: what `settle` makes, else what `parse` makes, else one of its choices, else text. */
export type ValueOf<S extends Setting> =
  S extends { settle: (value: never, flag: string) => infer T } ? T
  : S extends { parse: (text: string) => infer P } ? P
  : S extends { choices: readonly (infer C)[] } ? C
  : S extends { default: boolean } ? boolean
  : string;

/** The typed config of a table of rows, keyed by config field. */
export type SettingValues<Rows extends readonly FlagSetting[]> = { [S in Rows[number] as KeyOf<S>]: ValueOf<S> };

export const keyOf = (setting: FlagSetting): string => setting.key ?? setting.flag;

/** The name commander stores a flag's value under (`print-bootstrap` → `printBootstrap`). */
export const attributeOf = (setting: FlagSetting): string => setting.flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** The declared default as a value, parsed as any source's text is. */
export function defaultOf(setting: Setting): unknown {
  if (typeof setting.default !== 'string' || !setting.parse) return setting.default;
  return setting.parse(setting.default);
}

/** The config's value from what the sources settled on; nothing set: the default. */
export function settleSetting(setting: FlagSetting, value: unknown): unknown {
  const settled = value ?? defaultOf(setting);
  return setting.settle ? (setting.settle as (value: unknown, flag: string) => unknown)(settled, setting.flag) : settled;
}
