import { badEnv } from '../shared/errors.ts';

/**
 * A setting read from env only (the CA client's, under Istio's names).
 * Empty is unset, as Istio's env vars are; a value `parse` refuses is bad
 * input naming the variable (exit 2).
 */
export interface EnvSetting {
  env: string;
  /** Read when `env` is unset: another name Istio uses for the same thing. */
  alsoEnv?: string;
  /** As the variable would carry it; goes through `parse`. */
  default?: string;
  description: string;
  /** Unset is bad input, for this reason (the default is unset otherwise). */
  required?: string;
  /** Text to value; throws a plain Error whose message is the whole reason. */
  parse?: (text: string) => unknown;
}

/** Keeps each row's literal types for EnvValues. */
export const declareEnvSettings = <const Rows extends Record<string, EnvSetting>>(rows: Rows): Rows => rows;

type EnvValue<S extends EnvSetting> = (S extends { parse: (text: string) => infer P } ? P : string) | (S extends { default: string } | { required: string } ? never : undefined);

/** The typed values of a table of env rows, keyed as the table is. */
export type EnvValues<Rows extends Record<string, EnvSetting>> = { [K in keyof Rows]: EnvValue<Rows[K]> };

/** The variable that carries a row's value, when one does. */
function setVariable(env: NodeJS.ProcessEnv, setting: EnvSetting): string | undefined {
  return [setting.env, setting.alsoEnv].find((name) => name !== undefined && env[name]);
}

export const isEnvSet = (env: NodeJS.ProcessEnv, setting: EnvSetting) => setVariable(env, setting) !== undefined;

/** One row's value: the variable's, else the default's, each through the row's parser. */
export function readEnvSetting<S extends EnvSetting>(env: NodeJS.ProcessEnv, setting: S): EnvValue<S> {
  const name = setVariable(env, setting);
  const text = name === undefined ? setting.default : env[name]!;
  if (text === undefined && setting.required) throw badEnv(setting.env, setting.required);
  if (text === undefined || !setting.parse) return text as EnvValue<S>;
  try {
    return setting.parse(text) as EnvValue<S>;
  } catch (error) {
    throw badEnv(name ?? setting.env, (error as Error).message, error);
  }
}

/** Every row of a table, in its order; the first bad value throws. */
export function readEnvSettings<Rows extends Record<string, EnvSetting>>(env: NodeJS.ProcessEnv, rows: Rows): EnvValues<Rows> {
  const values: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(rows)) values[key] = readEnvSetting(env, setting);
  return values as EnvValues<Rows>;
}
