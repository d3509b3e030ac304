import { bytesOf, decodeMessage, encodeMessage, lenField, stringOf, varintOf, withField, type ProtoField } from './proto.ts';
import type { PullPolicy } from './module-cache.ts';

const httpWasmType = 'type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm';
const networkWasmType = 'type.googleapis.com/envoy.extensions.filters.network.wasm.v3.Wasm';
const httpRbacType = 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC';
const networkRbacType = 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC';

/** The agent-only variables istiod puts in the VM's environment (never passed on to Envoy). */
export const pullSecretEnv = 'ISTIO_META_WASM_IMAGE_PULL_SECRET';
export const pullPolicyEnv = 'ISTIO_META_WASM_IMAGE_PULL_POLICY';
export const resourceVersionEnv = 'ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION';

/** Field numbers, from envoy/config/core/v3 and envoy/extensions/wasm/v3. */
const F = {
  extension: { name: 1, typedConfig: 2 },
  any: { typeUrl: 1, value: 2 },
  wasm: { config: 1 },
  plugin: { vmConfig: 3, failOpen: 5, failurePolicy: 7 },
  vm: { code: 3, env: 7 },
  env: { hostKeys: 1, keyValues: 2 },
  code: { local: 1, remote: 2 },
  local: { filename: 1 },
  remote: { httpUri: 1, sha256: 2 },
  httpUri: { uri: 1, timeout: 3 },
  duration: { seconds: 1, nanos: 2 },
} as const;
const failOpenPolicy = 3;

/** A TypedExtensionConfig holding a Wasm filter whose code is remote: what to fetch, and how to answer. */
export interface RemoteWasm {
  name: string;
  kind: 'http' | 'network';
  url: string;
  sha256: string;
  /** The plugin's http_uri timeout; Istio's 5 s when it has none. */
  timeoutMs: number;
  pullSecret?: string;
  pullPolicy: PullPolicy;
  resourceVersion: string;
  failOpen: boolean;
}

interface Parsed extends RemoteWasm {
  extension: ProtoField[];
  wasm: ProtoField[];
  plugin: ProtoField[];
  vm: ProtoField[];
  typeUrl: string;
}

export class ConvertError extends Error {}

const sub = (fields: ProtoField[], number: number) => decodeMessage(bytesOf(fields, number) ?? Buffer.alloc(0));

/**
 * Reads a TypedExtensionConfig: undefined when it is not a Wasm filter or
 * its code is already local. Throws ConvertError for a Wasm filter with no
 * code at all, and ProtoError for bytes that are not protobuf.
 */
export function parseRemoteWasm(extensionBytes: Buffer): Parsed | undefined {
  const extension = decodeMessage(extensionBytes);
  const name = stringOf(extension, F.extension.name) ?? '';
  const any = sub(extension, F.extension.typedConfig);
  const typeUrl = stringOf(any, F.any.typeUrl);
  if (typeUrl !== httpWasmType && typeUrl !== networkWasmType) return undefined;
  const wasm = sub(any, F.any.value);
  const plugin = sub(wasm, F.wasm.config);
  const vm = sub(plugin, F.plugin.vmConfig);
  const code = sub(vm, F.vm.code);
  const remoteBytes = bytesOf(code, F.code.remote);
  if (!remoteBytes) {
    if (bytesOf(code, F.code.local)) return undefined;
    throw new ConvertError(`Wasm filter ${name} has neither remote nor local code`);
  }
  const remote = decodeMessage(remoteBytes);
  // No http_uri: the fetch fails and the fallback stands in, as with Istio's agent.
  const uri = sub(remote, F.remote.httpUri);
  const env = readEnv(sub(vm, F.vm.env));
  const policy = varintOf(plugin, F.plugin.failurePolicy) ?? 0;
  const sha = stringOf(remote, F.remote.sha256) ?? '';
  return {
    name,
    kind: typeUrl === httpWasmType ? 'http' : 'network',
    url: stringOf(uri, F.httpUri.uri) ?? '',
    // istiod writes "nil" when the plugin gives no checksum.
    sha256: sha === 'nil' ? '' : sha,
    timeoutMs: durationMs(bytesOf(uri, F.httpUri.timeout)) ?? 5000,
    pullSecret: env.get(pullSecretEnv),
    pullPolicy: pullPolicyOf(env.get(pullPolicyEnv)),
    resourceVersion: env.get(resourceVersionEnv) ?? '',
    failOpen: policy !== 0 ? policy === failOpenPolicy : (varintOf(plugin, F.plugin.failOpen) ?? 0) !== 0,
    extension, wasm, plugin, vm, typeUrl,
  };
}

function pullPolicyOf(text: string | undefined): PullPolicy {
  return text === 'IfNotPresent' || text === 'Always' ? text : 'unspecified';
}

function durationMs(bytes: Buffer | undefined): number | undefined {
  if (!bytes) return undefined;
  const fields = decodeMessage(bytes);
  const ms = (varintOf(fields, F.duration.seconds) ?? 0) * 1000 + Math.floor((varintOf(fields, F.duration.nanos) ?? 0) / 1e6);
  return ms > 0 ? ms : undefined;
}

function readEnv(env: ProtoField[]): Map<string, string> {
  const values = new Map<string, string>();
  for (const field of env) {
    if (field.number !== F.env.keyValues || field.wireType !== 2) continue;
    const entry = decodeMessage(field.value);
    values.set(stringOf(entry, 1) ?? '', stringOf(entry, 2) ?? '');
  }
  return values;
}

/** The same TypedExtensionConfig with its code read from `filename`, and istiod's agent-only variables removed. */
export function withLocalCode(parsed: Parsed, filename: string): Buffer {
  const local = encodeMessage([lenField(F.local.filename, filename)]);
  const code = encodeMessage([lenField(F.code.local, local)]);
  let vm = withField(parsed.vm, F.vm.code, lenField(F.vm.code, code));
  vm = withField(vm, F.vm.env, strippedEnv(parsed.vm));
  const plugin = withField(parsed.plugin, F.plugin.vmConfig, lenField(F.plugin.vmConfig, encodeMessage(vm)));
  const wasm = withField(parsed.wasm, F.wasm.config, lenField(F.wasm.config, encodeMessage(plugin)));
  const any = encodeMessage([lenField(F.any.typeUrl, parsed.typeUrl), lenField(F.any.value, encodeMessage(wasm))]);
  return encodeMessage(withField(parsed.extension, F.extension.typedConfig, lenField(F.extension.typedConfig, any)));
}

/** The VM environment without ISTIO_META_* pairs; none at all when nothing is left. */
function strippedEnv(vm: ProtoField[]): ProtoField | undefined {
  const envBytes = bytesOf(vm, F.vm.env);
  if (!envBytes) return undefined;
  const kept = decodeMessage(envBytes).filter(
    (field) => field.number !== F.env.keyValues || !(stringOf(decodeMessage(field.value), 1) ?? '').startsWith('ISTIO_META_'),
  );
  return kept.length ? lenField(F.vm.env, encodeMessage(kept)) : undefined;
}

/**
 * What Envoy gets when the module cannot be had: an RBAC filter under the
 * same name, allowing everything (fail open: no rules) or nothing (an empty
 * rule set), with Istio's stat prefixes.
 */
export function fallbackFilter(name: string, kind: 'http' | 'network', failOpen: boolean): Buffer {
  const prefix = failOpen ? 'wasm-default-allow' : 'wasm-default-deny';
  const rules = failOpen ? [] : [lenField(1, Buffer.alloc(0))];
  // http RBAC: rules 1, rules_stat_prefix 6. network RBAC: rules 1, stat_prefix 3.
  const rbac = encodeMessage([...rules, lenField(kind === 'http' ? 6 : 3, prefix)]);
  const any = encodeMessage([lenField(F.any.typeUrl, kind === 'http' ? httpRbacType : networkRbacType), lenField(F.any.value, rbac)]);
  return encodeMessage([lenField(F.extension.name, name), lenField(F.extension.typedConfig, any)]);
}
