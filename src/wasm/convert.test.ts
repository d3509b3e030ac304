import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fallbackFilter, parseRemoteWasm, pullPolicyEnv, pullSecretEnv, resourceVersionEnv, withLocalCode } from './convert.ts';
import { bytesOf, decodeMessage, encodeMessage, lenField, stringOf, varintField, varintOf, type ProtoField } from './proto.ts';

const httpWasm = 'type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm';
const msg = (...fields: ProtoField[]) => encodeMessage(fields);
const entry = (key: string, value: string) => lenField(2, msg(lenField(1, key), lenField(2, value)));
const dig = (bytes: Buffer, ...path: number[]) => path.reduce<Buffer | undefined>((at, number) => at && bytesOf(decodeMessage(at), number), bytes);

/** A TypedExtensionConfig as istiod sends it for a WasmPlugin, with an unknown field (99) to survive. */
function extension(options: { code?: Buffer; failurePolicy?: number; failOpen?: boolean; type?: string; timeoutSeconds?: number } = {}): Buffer {
  const remote = msg(
    lenField(
      1,
      msg(
        lenField(1, 'oci://registry.example/wasm:v1'),
        lenField(2, '_'),
        ...(options.timeoutSeconds ? [lenField(3, msg(varintField(1, options.timeoutSeconds)))] : []),
      ),
    ),
    lenField(2, 'ab'.repeat(32)),
  );
  const env = msg(
    lenField(1, 'HOST_KEY'),
    entry(pullSecretEnv, '{"auths":{}}'),
    entry(pullPolicyEnv, 'Always'),
    entry(resourceVersionEnv, '7'),
    entry('USER_VAR', 'kept'),
  );
  const vm = msg(
    lenField(1, 'vm'),
    lenField(2, 'envoy.wasm.runtime.v8'),
    lenField(3, options.code ?? msg(lenField(2, remote))),
    lenField(7, env),
    lenField(99, 'future'),
  );
  const plugin = msg(
    lenField(1, 'plugin'),
    lenField(3, vm),
    ...(options.failOpen ? [varintField(5, 1)] : []),
    ...(options.failurePolicy ? [varintField(7, options.failurePolicy)] : []),
  );
  const any = msg(lenField(1, options.type ?? httpWasm), lenField(2, msg(lenField(1, plugin))));
  return msg(lenField(1, 'extensions.istio.io/wasmplugin/default.headers'), lenField(2, any));
}

describe('remote Wasm conversion', () => {
  it('reads what to fetch from a remote Wasm filter', () => {
    const parsed = parseRemoteWasm(extension({ timeoutSeconds: 30 }))!;
    assert.equal(parsed.name, 'extensions.istio.io/wasmplugin/default.headers');
    assert.equal(parsed.kind, 'http');
    assert.equal(parsed.url, 'oci://registry.example/wasm:v1');
    assert.equal(parsed.sha256, 'ab'.repeat(32));
    assert.equal(parsed.timeoutMs, 30_000);
    assert.equal(parsed.pullSecret, '{"auths":{}}');
    assert.equal(parsed.pullPolicy, 'Always');
    assert.equal(parsed.resourceVersion, '7');
    const nameless = msg(...decodeMessage(extension()).filter((field) => field.number !== 1));
    assert.equal(parseRemoteWasm(nameless)!.name, '', 'a filter without a name is named empty');
    assert.equal(parsed.failOpen, false);
    assert.equal(parseRemoteWasm(extension())!.timeoutMs, 5000, "Istio's 5 s without a timeout");
  });

  it('fail open: failure_policy FAIL_OPEN, or the deprecated fail_open when no policy is set', () => {
    const table: [Parameters<typeof extension>[0], boolean][] = [
      [{}, false],
      [{ failOpen: true }, true],
      [{ failurePolicy: 3 }, true],
      [{ failurePolicy: 2, failOpen: true }, false],
      [{ failurePolicy: 1 }, false],
    ];
    for (const [options, failOpen] of table) assert.equal(parseRemoteWasm(extension(options))!.failOpen, failOpen, JSON.stringify(options));
  });

  it('leaves non-Wasm filters and local code alone, and refuses a Wasm filter without code', () => {
    assert.equal(parseRemoteWasm(extension({ type: 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' })), undefined);
    assert.equal(parseRemoteWasm(extension({ code: msg(lenField(1, msg(lenField(1, '/x.wasm')))) })), undefined);
    assert.throws(() => parseRemoteWasm(extension({ code: Buffer.alloc(0) })), /neither remote nor local/);
  });

  it('points the code at the local file, drops ISTIO_META_* variables and keeps every other byte', () => {
    const original = extension();
    const rewritten = withLocalCode(parseRemoteWasm(original)!, '/cache/x.wasm');
    const vm = dig(rewritten, 2, 2, 1, 3)!;
    assert.equal(dig(vm, 3, 1, 1)?.toString(), '/cache/x.wasm');
    assert.equal(dig(vm, 3, 2), undefined, 'no remote left');
    const env = decodeMessage(dig(vm, 7)!);
    const pairs = env.filter((field) => field.number === 2).map((field) => stringOf(decodeMessage(field.value), 1));
    assert.deepEqual(pairs, ['USER_VAR']);
    assert.equal(stringOf(env, 1), 'HOST_KEY');
    assert.equal(stringOf(decodeMessage(vm), 99), 'future', 'unknown fields survive');
    assert.equal(stringOf(decodeMessage(vm), 2), 'envoy.wasm.runtime.v8');
    assert.equal(stringOf(decodeMessage(rewritten), 1), 'extensions.istio.io/wasmplugin/default.headers');
  });

  it('fallbacks: RBAC under the same name, deny-all with an empty rule set, allow-all with none', () => {
    const deny = fallbackFilter('f', 'http', false);
    assert.equal(stringOf(decodeMessage(deny), 1), 'f');
    assert.equal(dig(deny, 2, 1)?.toString(), 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC');
    const denyRbac = decodeMessage(dig(deny, 2, 2)!);
    assert.deepEqual(bytesOf(denyRbac, 1), Buffer.alloc(0), 'rules present and empty');
    assert.equal(stringOf(denyRbac, 6), 'wasm-default-deny');
    const allowRbac = decodeMessage(dig(fallbackFilter('f', 'http', true), 2, 2)!);
    assert.equal(bytesOf(allowRbac, 1), undefined);
    const network = fallbackFilter('n', 'network', false);
    assert.equal(dig(network, 2, 1)?.toString(), 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC');
    assert.equal(stringOf(decodeMessage(dig(network, 2, 2)!), 3), 'wasm-default-deny');
    assert.equal(varintOf(decodeMessage(dig(network, 2, 2)!), 4), undefined);
  });
});

describe('remote Wasm conversion, edge cases', () => {
  it('a remote without http_uri is read (the fetch fails later and the fallback stands in)', () => {
    const noUri = msg(lenField(2, msg(lenField(2, 'ab'.repeat(32)))));
    const parsed = parseRemoteWasm(extension({ code: noUri }))!;
    assert.equal(parsed.url, '');
  });

  it('durations: nanos count in whole ms, a zero or missing timeout is 5 s; "nil" is no checksum; pull policies other than IfNotPresent and Always are unspecified', () => {
    const withTimeout = (duration: Buffer) =>
      msg(lenField(2, msg(lenField(1, msg(lenField(1, 'https://m.test/p.wasm'), lenField(3, duration))), lenField(2, 'nil'))));
    const table: [Buffer, number][] = [
      [msg(varintField(1, 2), varintField(2, 500_000_000)), 2500],
      [msg(varintField(2, 1_999_999)), 1],
      [msg(varintField(2, 999_999)), 5000],
      [msg(), 5000],
    ];
    for (const [duration, ms] of table) assert.equal(parseRemoteWasm(extension({ code: withTimeout(duration) }))!.timeoutMs, ms, duration.toString('hex'));
    assert.equal(parseRemoteWasm(extension({ code: withTimeout(msg()) }))!.sha256, '');
    const network = parseRemoteWasm(extension({ type: 'type.googleapis.com/envoy.extensions.filters.network.wasm.v3.Wasm' }))!;
    assert.equal(network.kind, 'network');
  });

  it('the VM env: pull policy spellings, a missing resource version, env entries that are not key-value pairs', () => {
    const withEnv = (...entries: ProtoField[]) => {
      const remote = msg(lenField(1, msg(lenField(1, 'https://m.test/p.wasm'))));
      const vm = msg(lenField(3, msg(lenField(2, remote))), lenField(7, msg(...entries)));
      return msg(lenField(1, 'f'), lenField(2, msg(lenField(1, httpWasm), lenField(2, msg(lenField(1, msg(lenField(3, vm))))))));
    };
    for (const [policy, expected] of [['IfNotPresent', 'IfNotPresent'], ['Always', 'Always'], ['always', 'unspecified'], ['', 'unspecified']] as const) {
      assert.equal(parseRemoteWasm(withEnv(entry(pullPolicyEnv, policy)))!.pullPolicy, expected, policy);
    }
    const odd = parseRemoteWasm(
      withEnv(varintField(2, 5), lenField(3, msg(lenField(1, resourceVersionEnv), lenField(2, '9'))), lenField(2, msg(lenField(2, 'no key')))),
    )!;
    assert.equal(odd.resourceVersion, '', 'only field 2 of the env, and only length-delimited, holds pairs');
    assert.equal(odd.pullSecret, undefined);
    assert.equal(parseRemoteWasm(withEnv(lenField(2, msg(lenField(1, pullSecretEnv)))))!.pullSecret, '', 'a secret named without a value is empty, not absent');
  });

  it('rewritten: an env of ISTIO_META_* pairs alone is dropped whole; a VM without env gets none', () => {
    const onlyMeta = msg(lenField(1, msg(lenField(1, 'https://m.test/p.wasm'))));
    const vmOf = (bytes: Buffer) => decodeMessage(dig(bytes, 2, 2, 1, 3)!);
    const build = (env: Buffer | undefined) => {
      const vm = msg(lenField(3, msg(lenField(2, onlyMeta))), ...(env ? [lenField(7, env)] : []));
      return msg(lenField(1, 'f'), lenField(2, msg(lenField(1, httpWasm), lenField(2, msg(lenField(1, msg(lenField(3, vm))))))));
    };
    const metaOnly = withLocalCode(parseRemoteWasm(build(msg(entry(pullPolicyEnv, 'Always'), entry(resourceVersionEnv, '1'))))!, '/c/x.wasm');
    assert.equal(bytesOf(vmOf(metaOnly), 7), undefined);
    assert.equal(bytesOf(vmOf(withLocalCode(parseRemoteWasm(build(undefined))!, '/c/x.wasm')), 7), undefined);
    const hostKeys = withLocalCode(parseRemoteWasm(build(msg(lenField(1, 'K'), entry('ISTIO_METAX', 'v'))))!, '/c/x.wasm');
    assert.deepEqual(decodeMessage(bytesOf(vmOf(hostKeys), 7)!).map((field) => field.number), [1, 2], 'ISTIO_METAX is not ISTIO_META_*');
    assert.equal(stringOf(decodeMessage(dig(hostKeys, 2)!), 1), httpWasm, 'the Any keeps its type');
  });
});

