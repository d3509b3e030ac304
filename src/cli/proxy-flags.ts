import { InvalidArgumentError, Option } from 'commander';
import { istioCompatFlags } from '../settings/command-flags.ts';
import { flagRows } from '../settings/registry.ts';
import { defaultOf, type FlagSetting } from '../settings/setting.ts';

/** Every flag of `pilot-agent proxy`, in help and README order. */
export const proxyFlags: readonly FlagSetting[] = flagRows;

/** Flags kept for old command lines; the agent warns when they are given. */
export const ignoredFlags = istioCompatFlags.filter((spec) => spec.ignored === 'obsolete').map((spec) => spec.flag);

/** Istio flags accepted (so today's injected pods start) but not implemented; one warning each when given. */
export const unimplementedFlags = istioCompatFlags.filter((spec) => spec.ignored === 'unimplemented').map((spec) => spec.flag);

/**
 * Turns a row into a commander option: commander reads the command line and
 * the row's env var; ProxyConfig is layered under both afterwards.
 */
export function toOption(spec: FlagSetting): Option {
  const option = new Option(`--${spec.flag}${spec.value ? ` ${spec.value}` : ''}`, spec.description);
  if (spec.default !== undefined && spec.default !== '') option.default(defaultOf(spec), String(spec.default));
  if (spec.env) option.env(spec.env);
  if (spec.parse) option.argParser((text: string) => wrapParse(spec, text));
  if (spec.choices) option.choices(spec.choices);
  if (spec.hidden) option.hideHelp();
  return option;
}

function wrapParse(spec: FlagSetting, text: string): unknown {
  try {
    return spec.parse!(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
