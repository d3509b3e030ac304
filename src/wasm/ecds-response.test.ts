import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Registry } from '../metrics/index.ts';
import { silentLogger } from '../shared/log.ts';
import { registerWasmMetrics } from './metrics.ts';
import { extensionConfigType } from '../discovery/type-urls.ts';
import { convertEcdsResponse } from './ecds-response.ts';
import type { ModuleRequest } from './module-cache.ts';
import { bytesOf, decodeMessage, encodeMessage, lenField, stringOf, varintField, type ProtoField } from './proto.ts';

const msg = (...fields: ProtoField[]) => encodeMessage(fields);
const wasmType = 'type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm';

function wasmExtension(name: string, options: { failOpen?: boolean; secret?: string } = {}): Buffer {
  const remote = msg(lenField(1, msg(lenField(1, 'https://m.example/p.wasm'))), lenField(2, 'nil'));
  const env =
    options.secret === undefined ? [] : [lenField(7, msg(lenField(2, msg(lenField(1, 'ISTIO_META_WASM_IMAGE_PULL_SECRET'), lenField(2, options.secret)))))];
  const vm = msg(lenField(3, msg(lenField(2, remote))), ...env);
  const plugin = msg(lenField(3, vm), ...(options.failOpen ? [varintField(7, 3)] : []));
  return msg(lenField(1, name), lenField(2, msg(lenField(1, wasmType), lenField(2, msg(lenField(1, plugin))))));
}
const any = (value: Buffer) => msg(lenField(1, extensionConfigType), lenField(2, value));
const sotw = (...resources: Buffer[]) =>
  msg(lenField(1, 'v1'), ...resources.map((resource) => lenField(2, any(resource))), lenField(4, extensionConfigType), lenField(5, 'n1'));

/** The TypedExtensionConfig of each resource of a converted SotW response. */
const extensions = (message: Buffer) =>
  decodeMessage(message)
    .filter((field) => field.number === 2)
    .map((field) => decodeMessage(bytesOf(decodeMessage(field.value), 2)!));
const typeOf = (extension: ProtoField[]) => stringOf(decodeMessage(bytesOf(extension, 2)!), 1);

function cache(fail?: string) {
  const asked: ModuleRequest[] = [];
  return { asked, get: async (request: ModuleRequest) => (asked.push(request), fail ? Promise.reject(new Error(fail)) : '/cache/p.wasm') };
}

describe('ECDS responses', () => {
  it('rewrites remote Wasm resources and keeps the others and the envelope', async () => {
    const other = msg(lenField(1, 'router'), lenField(2, msg(lenField(1, 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router'))));
    const modules = cache();
    const outcome = await convertEcdsResponse(sotw(wasmExtension('a'), other), { mode: 'sotw', cache: modules, logger: silentLogger });
    assert.ok('message' in outcome && outcome.message);
    const [a, b] = extensions(outcome.message);
    assert.equal(typeOf(a!), wasmType);
    assert.ok(bytesOf(a!, 2)!.includes(Buffer.from('/cache/p.wasm')));
    assert.deepEqual(msg(...b!), other);
    assert.equal(stringOf(decodeMessage(outcome.message), 5), 'n1');
    assert.equal(modules.asked[0]!.checksum, '', "istiod's nil is no checksum");
  });

  it('leaves a response without remote Wasm untouched (undefined: forward the original bytes)', async () => {
    const outcome = await convertEcdsResponse(sotw(msg(lenField(1, 'x'))), { mode: 'sotw', cache: cache(), logger: silentLogger });
    assert.deepEqual(outcome, { message: undefined });
  });

  it('a failed fetch becomes deny-all, or allow-all for fail open; an empty pull secret fails before fetching', async () => {
    for (const [failOpen, type] of [[false, 'deny'], [true, 'allow']] as const) {
      const outcome = await convertEcdsResponse(sotw(wasmExtension('a', { failOpen })), { mode: 'sotw', cache: cache('unreachable'), logger: silentLogger });
      assert.ok('message' in outcome && outcome.message);
      const [extension] = extensions(outcome.message);
      assert.equal(typeOf(extension!), 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC');
      assert.ok(bytesOf(extension!, 2)!.includes(Buffer.from(`wasm-default-${type}`)));
    }
    const modules = cache();
    const outcome = await convertEcdsResponse(sotw(wasmExtension('a', { secret: '' })), { mode: 'sotw', cache: modules, logger: silentLogger });
    assert.ok('message' in outcome && outcome.message?.includes(Buffer.from('wasm-default-deny')));
    assert.equal(modules.asked.length, 0);
  });

  it('NACKs a resource it cannot read, with the response nonce', async () => {
    const broken = msg(lenField(1, 'a'), lenField(2, msg(lenField(1, wasmType), lenField(2, Buffer.from([0x0a, 0xff])))));
    const outcome = await convertEcdsResponse(sotw(broken), { mode: 'sotw', cache: cache(), logger: silentLogger });
    assert.ok('nack' in outcome);
    assert.equal(outcome.nonce, 'n1');
  });

  it('Delta: the Any inside each Resource is rewritten, the Resource\'s name and version kept', async () => {
    const resource = msg(lenField(1, 'r7'), lenField(2, any(wasmExtension('a'))), lenField(3, 'a'));
    const outcome = await convertEcdsResponse(msg(lenField(2, resource), lenField(4, extensionConfigType), lenField(5, 'n2')), {
      mode: 'delta',
      cache: cache(),
      logger: silentLogger,
    });
    assert.ok('message' in outcome && outcome.message);
    const rewritten = decodeMessage(bytesOf(decodeMessage(outcome.message), 2)!);
    assert.equal(stringOf(rewritten, 1), 'r7');
    assert.equal(stringOf(rewritten, 3), 'a');
    assert.ok(bytesOf(rewritten, 2)!.includes(Buffer.from('/cache/p.wasm')));
  });

  it("counts conversions by Istio's results (success, fetch_failure) with their duration", async () => {
    const registry = new Registry();
    const metrics = registerWasmMetrics(registry, () => 3);
    await convertEcdsResponse(sotw(wasmExtension('a')), { mode: 'sotw', cache: cache(), logger: silentLogger, metrics });
    await convertEcdsResponse(sotw(wasmExtension('b')), { mode: 'sotw', cache: cache('unreachable'), logger: silentLogger, metrics });
    const text = await registry.metrics();
    assert.match(text, /^istio_agent_wasm_config_conversion_count\{result="success"\} 1$/m);
    assert.match(text, /^istio_agent_wasm_config_conversion_count\{result="fetch_failure"\} 1$/m);
    assert.match(text, /^istio_agent_wasm_config_conversion_duration_count 2$/m);
    assert.match(text, /^istio_agent_wasm_cache_entries 3$/m);
  });

  it('hostile responses: bytes that are not protobuf NACK with no nonce; a resource whose extension is not protobuf NACKs naming it; several errors are joined', async () => {
    const malformed = await convertEcdsResponse(Buffer.from([0x12, 0x05, 0x01]), { mode: 'sotw', cache: cache(), logger: silentLogger });
    assert.equal('nack' in malformed && malformed.nonce, '');
    assert.match('nack' in malformed ? malformed.nack : '', /^malformed ECDS response: /);
    const broken = msg(lenField(1, 'a'), lenField(2, msg(lenField(1, wasmType), lenField(2, Buffer.from([0x0a, 0xff])))));
    const two = await convertEcdsResponse(sotw(broken, broken), { mode: 'sotw', cache: cache(), logger: silentLogger });
    assert.ok('nack' in two);
    assert.match(two.nack, /^ECDS resource is not a TypedExtensionConfig: .+; ECDS resource is not a TypedExtensionConfig: /);
    const noNonce = await convertEcdsResponse(msg(lenField(2, any(broken))), { mode: 'sotw', cache: cache(), logger: silentLogger });
    assert.equal('nack' in noNonce && noNonce.nonce, '');
  });

  it('an Any of another type, a varint in the resources field and a Delta Resource without an Any pass untouched', async () => {
    const otherType = msg(lenField(1, 'type.googleapis.com/other'), lenField(2, wasmExtension('a')));
    const modules = cache();
    assert.deepEqual(
      await convertEcdsResponse(msg(lenField(2, otherType), varintField(2, 1), lenField(5, 'n')), { mode: 'sotw', cache: modules, logger: silentLogger }),
      { message: undefined },
    );
    assert.deepEqual(
      await convertEcdsResponse(msg(lenField(2, msg(lenField(1, 'r'))), lenField(5, 'n')), { mode: 'delta', cache: modules, logger: silentLogger }),
      { message: undefined },
    );
    assert.equal(modules.asked.length, 0);
    const sotwInDelta = await convertEcdsResponse(sotw(wasmExtension('a')), { mode: 'delta', cache: modules, logger: silentLogger });
    assert.ok('message' in sotwInDelta, 'a SotW Any read as a Delta Resource is not taken for one');
  });

  it('asks the cache for what the filter names; a filter without http_uri falls back without asking', async () => {
    const modules = cache();
    await convertEcdsResponse(sotw(wasmExtension('named', { secret: '{"auths":{}}' })), { mode: 'sotw', cache: modules, logger: silentLogger });
    assert.deepEqual(modules.asked, [
      {
        url: 'https://m.example/p.wasm',
        checksum: '',
        resourceName: 'named',
        resourceVersion: '',
        pullPolicy: 'unspecified',
        pullSecret: '{"auths":{}}',
        timeoutMs: 5000,
      },
    ]);
    const remote = msg(lenField(2, 'nil'));
    const vm = msg(lenField(3, msg(lenField(2, remote))));
    const noUri = msg(lenField(1, 'u'), lenField(2, msg(lenField(1, wasmType), lenField(2, msg(lenField(1, msg(lenField(3, vm))))))));
    const outcome = await convertEcdsResponse(sotw(noUri), { mode: 'sotw', cache: modules, logger: silentLogger });
    assert.ok('message' in outcome && outcome.message?.includes(Buffer.from('wasm-default-deny')));
    assert.equal(modules.asked.length, 1);
  });
  it('logs what became of each filter: ready (info, with its file and time) or not fetched (error, with the RBAC fallback and why)', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const started = performance.now();
    await convertEcdsResponse(sotw(wasmExtension('ok')), { mode: 'sotw', cache: cache(), logger });
    const elapsed = performance.now() - started;
    await convertEcdsResponse(sotw(wasmExtension('shut', { secret: '' })), { mode: 'sotw', cache: cache(), logger });
    await convertEcdsResponse(sotw(wasmExtension('open', { failOpen: true })), { mode: 'sotw', cache: cache('unreachable'), logger });
    const remote = msg(lenField(2, 'nil'));
    const vm = msg(lenField(3, msg(lenField(2, remote))));
    const noUri = msg(lenField(1, 'u'), lenField(2, msg(lenField(1, wasmType), lenField(2, msg(lenField(1, msg(lenField(3, vm))))))));
    await convertEcdsResponse(sotw(noUri), { mode: 'sotw', cache: cache(), logger });
    const [ready, ...failed] = lines;
    assert.deepEqual({ ...ready, ms: undefined, time: undefined, pid: undefined, hostname: undefined }, {
      level: 30, filter: 'ok', url: 'https://m.example/p.wasm', path: '/cache/p.wasm', ms: undefined, time: undefined, pid: undefined, hostname: undefined,
      msg: 'Wasm module ready; Envoy gets it as a local file',
    });
    assert.ok(typeof ready!.ms === 'number' && ready!.ms <= Math.round(elapsed), `ms ${String(ready!.ms)} within ${elapsed}`);
    const fallback = (kind: string) => `Wasm module not fetched; Envoy gets a ${kind} RBAC filter instead`;
    assert.deepEqual(
      failed.map((line) => [line.level, line.filter, line.url, (line.err as { message: string }).message, line.fallback, line.msg]),
      [
        [50, 'shut', 'https://m.example/p.wasm', 'the image pull secret is missing', 'deny-all', fallback('deny-all')],
        [50, 'open', 'https://m.example/p.wasm', 'unreachable', 'allow-all', fallback('allow-all')],
        [50, 'u', '', 'the remote code has no http_uri', 'deny-all', fallback('deny-all')],
      ],
    );
  });

  it('counts a resource that is not protobuf as unmarshal_failure, and times conversions from their start', async () => {
    const registry = new Registry();
    const metrics = registerWasmMetrics(registry, () => 0);
    const broken = msg(lenField(1, 'a'), lenField(2, msg(lenField(1, wasmType), lenField(2, Buffer.from([0x0a, 0xff])))));
    const started = performance.now();
    await convertEcdsResponse(sotw(broken), { mode: 'sotw', cache: cache(), logger: silentLogger, metrics });
    await convertEcdsResponse(sotw(wasmExtension('a')), { mode: 'sotw', cache: cache(), logger: silentLogger, metrics });
    const elapsed = performance.now() - started;
    const text = await registry.metrics();
    assert.match(text, /^istio_agent_wasm_config_conversion_count\{result="unmarshal_failure"\} 1$/m);
    const sum = Number(/^istio_agent_wasm_config_conversion_duration_sum (\S+)$/m.exec(text)?.[1]);
    assert.ok(sum >= 0 && sum <= elapsed, `the two conversions took ${sum} ms of ${elapsed}`);
  });
});

