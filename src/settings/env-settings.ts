import { AgentError } from '../shared/errors.ts';
import type { EnvSetting } from './setting.ts';

/**
 * Reading env-only rows (setting.ts's EnvSetting): empty is unset, as Istio's env vars are; a value `parse` refuses is bad input naming the variable
 * (exit 2).
 */
export type { EnvSetting } from './setting.ts';

/** Keeps each row's literal types for EnvValues. */
export const declareEnvSettings = <const Rows extends Record<string, EnvSetting>>(rows: Rows): Rows => rows;

type EnvValue<S extends EnvSetting> =
  (S extends { parse: (text: string) => infer P } ? P : string) | (S extends { default: string } | { required: string } ? never : undefined);

/** The typed values of a table of env rows, keyed as the table is. */
export type EnvValues<Rows extends Record<string, EnvSetting>> = { [K in keyof Rows]: EnvValue<Rows[K]> };

/** The variable that carries a row's value, when one does. */
function setVariable(env: NodeJS.ProcessEnv, setting: EnvSetting): string | undefined {
  return [setting.env, setting.alsoEnv].find((name) => name !== undefined && env[name]);
}

export const isEnvSet = (env: NodeJS.ProcessEnv, setting: EnvSetting) => setVariable(env, setting) !== undefined;

/** The variable's text as set, empty included (undefined when unset): for values passed on as they are. */
export function readEnvText(env: NodeJS.ProcessEnv, setting: EnvSetting): string | undefined {
  return env[setting.env];
}

/** How an error line names the variable a value came from: `env NAME` unless the caller knows better (a ProxyConfig field). */
export type SourceOf = (name: string) => string;
const fromEnv: SourceOf = (name) => `env ${name}`;

/** One row's value: the variable's, else the default's, each through the row's parser. */
export function readEnvSetting<S extends EnvSetting>(env: NodeJS.ProcessEnv, setting: S, sourceOf: SourceOf = fromEnv): EnvValue<S> {
  const name = setVariable(env, setting);
  const text = name === undefined ? setting.default : env[name]!;
  const bad = (reason: string, cause?: unknown) => new AgentError('BAD_ENV', `${sourceOf(name ?? setting.env)}: ${reason}`, { cause });
  if (text === undefined && setting.required) throw bad(setting.required);
  if (text === undefined || !setting.parse) return text as EnvValue<S>;
  try {
    return setting.parse(text) as EnvValue<S>;
  } catch (error) {
    throw bad((error as Error).message, error);
  }
}

/** Every row of a table, in its order; the first bad value throws. */
export function readEnvSettings<Rows extends Record<string, EnvSetting>>(env: NodeJS.ProcessEnv, rows: Rows, sourceOf?: SourceOf): EnvValues<Rows> {
  const values: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(rows)) values[key] = readEnvSetting(env, setting, sourceOf);
  return values as EnvValues<Rows>;
}
