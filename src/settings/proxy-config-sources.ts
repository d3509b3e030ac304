import { join } from 'node:path';
import type { PodInfo } from './pod-info.ts';
import { camel, checkProxyConfig, isProxyConfigField } from './proxy-config-fields.ts';
import { FileRefused, readBoundedFile } from '../shared/bounded-file.ts';
import { AgentError } from '../shared/errors.ts';

/** The pod annotation that carries a per-pod ProxyConfig (Istio's `proxy.istio.io/config`). */
export const proxyConfigAnnotation = 'proxy.istio.io/config';

export type ProxyConfigObject = Record<string, unknown>;

/** One place a ProxyConfig came from, named as error lines name it. */
export interface ProxyConfigSource {
  name: string;
  value: ProxyConfigObject;
}

export interface MergedProxyConfig {
  value: ProxyConfigObject;
  /** Which source set each top-level field, for error lines. */
  origin: Record<string, string>;
  /** Fields ProxyConfig does not declare: warned about and ignored, as Istio does. */
  unknown: { source: string; field: string }[];
}

export interface ProxyConfigInputs {
  env: NodeJS.ProcessEnv;
  /** --meshConfig: a MeshConfig whose `defaultConfig` is the base; absent is fine. */
  meshConfigPath: string;
  /** --podInfoDir, to name its `annotations` file, whose proxy.istio.io/config is in `podInfo` (read once, pod-info.ts). */
  podInfoDir: string;
  podInfo: PodInfo;
}

/**
 * Size caps, so a huge value is one line and exit 2 rather than gigabytes
 * of parser memory. Each is what Kubernetes itself lets through: a
 * ConfigMap (the mesh config) holds at most 1 MiB, and PROXY_CONFIG as its
 * node metadata is capped. The annotations file has its cap in pod-info.ts.
 */
export const proxyConfigCaps = { meshConfigBytes: 1024 * 1024, envBytes: 256 * 1024 } as const;

const badSource = (source: string, reason: string, cause?: unknown) => new AgentError('BAD_ENV', `${source}: ${reason}`, { cause });

/**
 * Istio's layering: the mesh config's `defaultConfig`, then PROXY_CONFIG,
 * then the pod annotation, each replacing the fields it sets. A source that
 * does not parse, or a field of the wrong type, is bad input naming both.
 */
export async function readProxyConfigSources(inputs: ProxyConfigInputs): Promise<MergedProxyConfig> {
  const sources = [await meshDefaultConfig(inputs.meshConfigPath), await envProxyConfig(inputs.env), await annotationProxyConfig(inputs)];
  return mergeProxyConfigs(sources.filter((source): source is ProxyConfigSource => source !== undefined));
}

export function mergeProxyConfigs(sources: readonly ProxyConfigSource[]): MergedProxyConfig {
  const merged: MergedProxyConfig = { value: {}, origin: {}, unknown: [] };
  for (const source of sources) {
    const problem = checkProxyConfig(source.value);
    if (problem) throw badSource(source.name, problem);
    const seen = new Map<string, string>();
    for (const [field, value] of Object.entries(source.value)) {
      if (!isProxyConfigField(field)) {
        merged.unknown.push({ source: source.name, field });
        continue;
      }
      // Kept by its JSON name, which every reader asks for: drain_duration is drainDuration.
      const name = camel(field);
      if (seen.has(name)) throw badSource(source.name, `field ${field} is set twice (also as ${seen.get(name)})`);
      seen.set(name, field);
      if (value !== null) [merged.value[name], merged.origin[name]] = [value, source.name];
    }
  }
  return merged;
}

/**
 * JSON or YAML text to an object. JSON (what the injection sends) needs no
 * YAML parser; the parser (memory every pod would pay) loads only for YAML.
 */
export async function parseProxyConfigText(source: string, text: string): Promise<ProxyConfigObject> {
  let value: unknown;
  try {
    value = looksLikeJson(text) ? JSON.parse(text) : (await loadYaml()).parse(text, { maxAliasCount: 100 });
  } catch (error) {
    throw badSource(source, `does not parse as JSON or YAML: ${(error as Error).message.split('\n')[0]}`, error);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw badSource(source, 'must be a ProxyConfig object');
  return value as ProxyConfigObject;
}

const looksLikeJson = (text: string) => text.trimStart().startsWith('{');

/** The bundle hands a CommonJS build's exports over as `default`; tsc's output as named exports. */
export async function loadYaml(): Promise<typeof import('yaml')> {
  const module = await import('yaml');
  return 'parse' in module && typeof module.parse === 'function' ? module : (module as unknown as { default: typeof import('yaml') }).default;
}

async function envProxyConfig(env: NodeJS.ProcessEnv): Promise<ProxyConfigSource | undefined> {
  if (!env.PROXY_CONFIG) return undefined;
  const bytes = Buffer.byteLength(env.PROXY_CONFIG);
  if (bytes > proxyConfigCaps.envBytes) throw badSource('env PROXY_CONFIG', `is ${bytes} bytes, more than the ${proxyConfigCaps.envBytes} allowed`);
  return { name: 'env PROXY_CONFIG', value: await parseProxyConfigText('env PROXY_CONFIG', env.PROXY_CONFIG) };
}

async function meshDefaultConfig(path: string): Promise<ProxyConfigSource | undefined> {
  const text = await readOptional(path, '--meshConfig', proxyConfigCaps.meshConfigBytes);
  if (text === undefined) return undefined;
  const name = `mesh config ${path}`;
  const mesh = await parseProxyConfigText(name, text);
  const defaults = mesh.defaultConfig;
  if (defaults === undefined || defaults === null) return undefined;
  if (typeof defaults !== 'object' || Array.isArray(defaults)) throw badSource(name, 'defaultConfig must be a ProxyConfig object');
  return { name: `${name} (defaultConfig)`, value: defaults as ProxyConfigObject };
}

async function annotationProxyConfig({ podInfoDir, podInfo }: ProxyConfigInputs): Promise<ProxyConfigSource | undefined> {
  const path = join(podInfoDir, 'annotations');
  const value = podInfo.annotations?.[proxyConfigAnnotation];
  if (value === undefined) return undefined;
  const name = `annotation ${proxyConfigAnnotation} (${path})`;
  return { name, value: await parseProxyConfigText(name, value) };
}

/**
 * The file's text, or undefined when there is none: every source is
 * optional. Symlinks are followed (a mounted ConfigMap is one), but only a
 * regular file within `maxBytes` is read: not a FIFO, not a device.
 */
async function readOptional(path: string, flag: string, maxBytes: number): Promise<string | undefined> {
  try {
    return (await readBoundedFile(path, { maxBytes })).toString('utf8');
  } catch (error) {
    if (error instanceof FileRefused) throw new AgentError('BAD_FILE', `${flag} ${path}: ${error.message}`, { cause: error });
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new AgentError('BAD_FILE', `${flag} ${path}: cannot read (${code ?? error})`, { cause: error });
  }
}

/** A nested message's field by its JSON name, also when written by its proto name (protojson takes both). */
export function fieldOf(message: Record<string, unknown>, name: string): unknown {
  if (name in message) return message[name];
  return Object.entries(message).find(([key]) => camel(key) === name)?.[1];
}

/** Stats inclusion lists as the user gives them: each replaces Istio's user part, the required part stays. */
export interface StatsInclusion {
  prefixes?: readonly string[];
  suffixes?: readonly string[];
  regexps?: readonly string[];
}

/** ProxyConfig.proxyStatsMatcher's inclusion lists, for the bootstrap's stats_matcher. */
export function proxyStatsMatcher(merged: MergedProxyConfig): StatsInclusion | undefined {
  const matcher = merged.value.proxyStatsMatcher as Record<string, unknown> | undefined;
  if (!matcher) return undefined;
  const list = (name: string) => {
    const value = fieldOf(matcher, name);
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string'))
      throw badSource(merged.origin.proxyStatsMatcher ?? 'ProxyConfig', `field proxyStatsMatcher.${name} must be an array of strings`);
    return value as string[];
  };
  return { prefixes: list('inclusionPrefixes'), suffixes: list('inclusionSuffixes'), regexps: list('inclusionRegexps') };
}

/** ProxyConfig.extraStatTags (checkProxyConfig made sure it is a list of strings). */
export function extraStatTags(merged: MergedProxyConfig): string[] | undefined {
  const tags = merged.value.extraStatTags ?? merged.value.extra_stat_tags;
  return Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : undefined;
}
