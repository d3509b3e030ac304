import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../metrics/index.ts';
import { frame } from '../../grpc/grpc-frame.ts';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import { readRequest, type XdsMode } from '../../discovery/wire.ts';
import type { TerminationReason } from './ending.ts';
import { FakeAdsStream } from './fake-ads-stream.ts';
import { fakeRelayContext, recordingLogger } from './fake-relay-context.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { RelayStream } from './relay-stream.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
/** SotW and Delta share the request's type (SotW 4, Delta 2) and node (2, 1) numbers per mode. */
const numbers = { sotw: { node: 2, type: 4, nonce: 5, version: 1 }, delta: { node: 1, type: 2, nonce: 6, version: 0 } } as const;
const request = (mode: XdsMode, fields: { node?: string; nonce?: string } = {}) => Buffer.concat([
  ...(fields.node ? [lenField(numbers[mode].node, lenField(1, fields.node))] : []),
  lenField(numbers[mode].type, clusterType),
  ...(fields.nonce ? [lenField(numbers[mode].nonce, fields.nonce)] : []),
]);
const response = (version: string, nonce: string) => Buffer.concat([lenField(1, version), lenField(4, clusterType), lenField(5, nonce)]);
const failures = async (registry: Registry) =>
  (await registry.getSingleMetric('istio_agent_xds_proxy_upstream_failures_total')!.get()).values.map((value) => value.labels['code']);
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** One RelayStream between a FakeAdsStream (Envoy) and scripted upstreams. */
async function relay(options: Parameters<typeof fakeRelayContext>[0] & { mode?: XdsMode } = {}) {
  const kit = fakeRelayContext(options);
  const upstream = kit.script[0];
  const ads = new FakeAdsStream();
  const { logger, lines } = recordingLogger();
  const stream = new RelayStream({ id: 7, mode: options.mode ?? 'sotw', ads, context: kit.context, logger });
  const done = stream.run();
  await settle();
  return { ...kit, ads, stream, done, lines, upstream: upstream instanceof FakeUpstream ? upstream : undefined };
}

describe('RelayStream: relaying', () => {
  it("sends Envoy's response headers only once the server answered the call, and says open", async () => {
    const { ads, stream, upstream, told } = await relay();
    assert.deepEqual(told.dialed, [true]);
    assert.equal(ads.opened, false);
    assert.equal(stream.upstreamState, 'dialing');
    upstream!.answer();
    assert.equal(ads.opened, true);
    assert.equal(stream.upstreamState, 'open');
  });

  it("passes Envoy's requests upstream and the server's responses to Envoy, byte for byte, also cut in pieces", async () => {
    const { ads, upstream } = await relay();
    upstream!.answer();
    ads.request(request('sotw', { node: 'sidecar~a' }));
    upstream!.respond(response('v1', 'n1'), 3);
    assert.deepEqual(upstream!.messages(), [request('sotw', { node: 'sidecar~a' })]);
    assert.deepEqual(ads.messages(), [response('v1', 'n1')]);
  });

  it('requests go upstream one by one, whole, also when Envoy sends them a byte at a time', async () => {
    const { ads, upstream } = await relay();
    const [one, two] = [request('sotw', { node: 'sidecar~a' }), request('sotw', { nonce: 'n1' })];
    ads.request(one);
    for (const byte of frame(two)) ads.bytes(Buffer.from([byte]));
    assert.deepEqual(upstream!.messages(), [one, two]);
  });

  it('once the stream ended, what Envoy still sends goes nowhere', async () => {
    const { ads, upstream, stream, done } = await relay();
    upstream!.answer();
    stream.stop();
    await done;
    ads.request(request('sotw'));
    ads.end();
    assert.deepEqual(upstream!.call.written, []);
    assert.equal(upstream!.call.ended, false);
  });

  for (const mode of ['sotw', 'delta'] as const) {
    it(`${mode}: a first request without a node gets the last stream's node; one with a node leaves it as it is`, async () => {
      const first = await relay({ mode });
      first.ads.request(request(mode, { node: 'sidecar~a' }));
      assert.equal(readRequest(first.told.node!, mode).typeUrl, '', 'the node kept is the Node message');
      const second = await relay({ mode });
      second.told.node = first.told.node;
      second.ads.request(request(mode));
      second.ads.request(request(mode, { nonce: 'n1' }));
      const [sent, later] = second.upstream!.messages().map((message) => readRequest(message, mode));
      assert.deepEqual(sent!.node, first.told.node);
      assert.equal(later!.node, undefined, 'only the first request');
    });
  }

  it("an ACK and a NACK are counted against the response they answer; a NACK is logged at warn", async () => {
    const { ads, upstream, lines, context } = await relay();
    upstream!.answer();
    ads.request(request('sotw'));
    upstream!.respond(response('v1', 'n1'));
    ads.request(Buffer.concat([request('sotw', { nonce: 'n1' }), lenField(6, lenField(2, 'bad cluster'))]));
    const nack = lines.find((line) => line.msg === 'Envoy rejected a response (NACK)');
    assert.equal(nack?.level, 40);
    assert.equal(nack?.version, 'v1');
    assert.equal(context.stats.snapshot().types[clusterType]?.nacks, 1);
  });

  it('a full upstream buffer pauses Envoy until it drains; a full Envoy buffer pauses upstream until Envoy takes it', async () => {
    const { ads, upstream } = await relay();
    upstream!.answer();
    upstream!.call.full = true;
    ads.request(request('sotw'));
    assert.equal(ads.paused, true);
    upstream!.call.emit('drain');
    assert.equal(ads.paused, false);
    ads.full = true;
    upstream!.respond(response('v1', 'n1'));
    assert.equal(upstream!.call.paused, true);
    ads.drain();
    assert.equal(upstream!.call.paused, false);
  });
});

/** How the stream ends, by what happens; every row is checked for its status, its log level and that the upstream call is closed. */
const endingRows: {
  name: string;
  mode?: XdsMode;
  act(s: Awaited<ReturnType<typeof relay>>): void;
  reason: TerminationReason;
  details: RegExp;
  status: number;
  level: 'info' | 'warn';
  failure?: string;
}[] = [
  {
    name: 'Envoy resets the call',
    details: /^Envoy closed the stream$/,
    act: (s) => s.ads.reset(),
    reason: 'envoy_closed',
    level: 'info',
    status: GrpcStatus.CANCELLED,
  },
  {
    name: 'Envoy half-closes between messages',
    details: /^Envoy ended the stream$/,
    act: (s) => (s.ads.request(request('sotw')), s.ads.end()),
    reason: 'envoy_closed',
    level: 'info',
    status: GrpcStatus.CANCELLED,
  },
  {
    name: 'Envoy half-closes inside a message',
    details: /^malformed request from Envoy: stream ended inside a message$/,
    act: (s) => (s.ads.bytes(Buffer.from([0, 0, 0, 0, 9, 1])), s.ads.end()),
    reason: 'bad_envoy_frame',
    level: 'warn',
    status: GrpcStatus.INVALID_ARGUMENT,
  },
  {
    name: 'Envoy sends a request over the size limit',
    details: /^malformed request from Envoy: ./,
    act: (s) => s.ads.bytes(Buffer.from([0, 0, 0, 8, 0])),
    reason: 'bad_envoy_frame',
    level: 'warn',
    status: GrpcStatus.RESOURCE_EXHAUSTED,
  },
  {
    name: 'Envoy sends a request that is not protobuf',
    details: /^malformed request from Envoy: ./,
    act: (s) => s.ads.request(Buffer.from([0xff, 0xff])),
    reason: 'bad_envoy_frame',
    level: 'warn',
    status: GrpcStatus.INVALID_ARGUMENT,
  },
  {
    name: 'the server answers HTTP 503',
    details: /^discovery server answered HTTP 503$/,
    act: (s) => s.upstream!.answer({ ':status': 503 }),
    reason: 'upstream_error',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'HTTP_503',
  },
  {
    name: 'the server ends the call OK',
    details: /^discovery server ended the stream: OK$/,
    act: (s) => (s.upstream!.answer(), s.upstream!.trailers(GrpcStatus.OK)),
    reason: 'upstream_closed',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
  },
  {
    name: 'the server ends the call with an error',
    details: /^discovery server ended the stream: PERMISSION_DENIED no$/,
    act: (s) => (s.upstream!.answer(), s.upstream!.trailers(GrpcStatus.PERMISSION_DENIED, 'no')),
    reason: 'upstream_error',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'PERMISSION_DENIED',
  },
  {
    name: 'the server resets the call',
    details: /^discovery server ended the stream: reset \(HTTP\/2 code 2, boom\)$/,
    act: (s) => (s.upstream!.answer(), s.upstream!.closeCall(2, new Error('boom'))),
    reason: 'upstream_error',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'RESET',
  },
  {
    name: 'the server stops inside a response',
    details: /^discovery server ended the stream: it stopped inside a response$/,
    act: (s) => (s.upstream!.answer(), s.upstream!.bytes(frame(response('v1', 'n1')).subarray(0, 8)), s.upstream!.trailers(GrpcStatus.OK)),
    reason: 'upstream_error',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'TRUNCATED',
  },
  {
    name: 'the server sends a response cut inside a field',
    details: /^malformed response from the discovery server: ./,
    act: (s) => (s.upstream!.answer(), s.upstream!.respond(Buffer.from([0x22]))),
    reason: 'bad_upstream_frame',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'BAD_FRAME',
  },
  {
    name: 'the server sends a response over the size limit',
    details: /^malformed response from the discovery server: ./,
    act: (s) => (s.upstream!.answer(), s.upstream!.bytes(Buffer.from([0, 0, 0, 0x20, 0]))),
    reason: 'bad_upstream_frame',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'BAD_FRAME',
  },
  {
    name: 'a Delta server without Delta (Trailers-Only UNIMPLEMENTED)',
    details: /^the discovery server does not implement Delta xDS$/,
    mode: 'delta',
    act: (s) => (s.upstream!.answer({ ':status': 200, 'grpc-status': String(GrpcStatus.UNIMPLEMENTED) }), s.upstream!.closeCall()),
    reason: 'delta_unsupported',
    level: 'info',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'UNIMPLEMENTED',
  },
  {
    name: 'a SotW call answered UNIMPLEMENTED is an error, not a fallback',
    details: /^discovery server ended the stream: UNIMPLEMENTED $/,
    act: (s) => (s.upstream!.answer(), s.upstream!.trailers(GrpcStatus.UNIMPLEMENTED)),
    reason: 'upstream_error',
    level: 'warn',
    status: GrpcStatus.UNAVAILABLE,
    failure: 'UNIMPLEMENTED',
  },
  {
    name: 'the relay stops',
    details: /^the agent is stopping$/,
    act: (s) => s.stream.stop(),
    reason: 'relay_stopped',
    level: 'info',
    status: GrpcStatus.UNAVAILABLE,
  },
];

describe('RelayStream: how it ends', () => {
  for (const row of endingRows) {
    it(`${row.name}: ${row.reason}, Envoy gets status ${row.status}, logged at ${row.level}`, async () => {
      const s = await relay({ mode: row.mode });
      row.act(s);
      assert.equal(await s.done, row.reason);
      if (row.name === 'Envoy resets the call') assert.equal(s.ads.finished, undefined, 'a reset call gets no status');
      else assert.equal(s.ads.finished?.status, row.status);
      const ended = s.lines.find((line) => line.msg === 'xDS stream ended');
      assert.match(String(ended?.details), row.details);
      assert.equal(ended?.reason, row.reason);
      if (s.ads.finished) assert.match(s.ads.finished.details, row.details);
      assert.equal(ended?.level, row.level === 'info' ? 30 : 40);
      assert.equal(s.upstream!.closes, 1, 'the upstream call is closed');
      assert.deepEqual(Object.keys(s.context.stats.snapshot().terminations), [], 'the relay, not the stream, counts the ending');
      assert.deepEqual(await failures(s.registry), row.failure ? [row.failure] : []);
      assert.deepEqual(s.told.unimplemented, row.failure === 'UNIMPLEMENTED' ? [row.mode ?? 'sotw'] : [], 'told UNIMPLEMENTED, with the flavour');
    });
  }

  it('ends once: a second ending changes neither the status nor the log', async () => {
    const s = await relay();
    s.ads.reset();
    s.stream.stop();
    assert.equal(await s.done, 'envoy_closed');
    assert.equal(s.lines.filter((line) => line.msg === 'xDS stream ended').length, 1);
  });

  it('Envoy half-closing ends the upstream side too, even when the server never ends its own', async () => {
    const s = await relay();
    s.upstream!.answer();
    s.ads.end();
    assert.equal(await s.done, 'envoy_closed');
    assert.equal(s.upstream!.call.ended, true);
  });
});
