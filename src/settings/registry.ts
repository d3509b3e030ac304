import { bootstrapEnv } from './bootstrap-env.ts';
import { caEnv } from './ca-env.ts';
import { commandFlags, istioCompatFlags } from './command-flags.ts';
import { dnsEnv } from './dns-env.ts';
import { envoyEnv } from './envoy-env.ts';
import { platformEnv } from './platform-env.ts';
import { podEnv } from './pod-env.ts';
import { proxySettings } from './proxy-settings.ts';
import { proxylessEnv } from './proxyless-env.ts';
import type { EnvSetting, FlagSetting, Setting } from './setting.ts';
import { statusEnv } from './status-env.ts';
import { wasmEnv } from './wasm-env.ts';

/**
 * The registry: every table of settings rows of `pilot-agent proxy`, one
 * row type (setting.ts). The flag tables become commander's options and the
 * README's flag table; the env tables are read by readAgentInputs (and the
 * CA's by ca/ once it knows it asks a CA); docs/settings.md lists them all.
 */
export const flagTables = { proxy: proxySettings, command: commandFlags, istioCompat: istioCompatFlags } as const;
export const envTables = {
  ca: caEnv, envoy: envoyEnv, bootstrap: bootstrapEnv, status: statusEnv, proxyless: proxylessEnv, dns: dnsEnv, wasm: wasmEnv, pod: podEnv,
  platform: platformEnv,
} as const;

/** Every flag row, in help and README order. */
export const flagRows: readonly FlagSetting[] = Object.values(flagTables).flat();

/** Every env-only row, table by table. */
export const envRows: readonly EnvSetting[] = Object.values(envTables).flatMap((table) => Object.values<EnvSetting>(table));

/** Every row of every table. */
export const allSettings: readonly Setting[] = [...flagRows, ...envRows];

/** Every env var a row names (a flag's, an env-only row's and its other name), each once. */
export const envVarNames = (): string[] => [...new Set(allSettings.flatMap((row) => [row.env, row.alsoEnv].filter((name) => name !== undefined)))];
