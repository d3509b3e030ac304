import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePrometheus } from '../../test/support/prometheus.ts';
import { MetadataFilter } from './metadata-filter.ts';

const agent = '# HELP istio_agent_x An agent counter\n# TYPE istio_agent_x counter\nistio_agent_x 3\n';
const envoy = [
  '# TYPE envoy_cluster_upstream_cx_total counter',
  'envoy_cluster_upstream_cx_total{envoy_cluster_name="a"} 1',
  '# TYPE istio_agent_x counter',
  '# HELP istio_agent_x repeated by Envoy',
  '# Note: a free comment',
  '# TYPE envoy_server_live gauge',
  'envoy_server_live{l="# TYPE envoy_server_live gauge"} 1',
  '# TYPE envoy_cluster_upstream_cx_total counter',
  '# TYPE envoy_last gauge',
  'envoy_last 2',
].join('\n');

/** A chunk in its own memory (Buffer.from(string) may share Node's pool), and whether a piece is a view of it. */
const own = (text: string) => Buffer.from(new Uint8Array(Buffer.from(text)).buffer);
const within = (piece: Buffer, chunk: Buffer) => piece.buffer === chunk.buffer;

/** Envoy's part streamed in chunks of `size` bytes through a filter that has seen the agent's text. */
function streamed(text: string, size: number): string {
  const filter = new MetadataFilter();
  const out = [filter.text(agent)];
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += size) for (const piece of filter.chunk(bytes.subarray(at, at + size))) out.push(piece.toString());
  for (const piece of filter.end()) out.push(piece.toString());
  return out.join('');
}

describe('MetadataFilter on a streamed part', () => {
  const whole = (() => {
    const filter = new MetadataFilter();
    return filter.text(agent) + filter.text(envoy);
  })();

  it('drops the repeats a whole text would, and keeps the rest byte for byte', () => {
    assert.equal(
      whole,
      `${agent}# TYPE envoy_cluster_upstream_cx_total counter\nenvoy_cluster_upstream_cx_total{envoy_cluster_name="a"} 1\n# Note: a free comment\n` +
        '# TYPE envoy_server_live gauge\nenvoy_server_live{l="# TYPE envoy_server_live gauge"} 1\n# TYPE envoy_last gauge\nenvoy_last 2\n',
    );
    parsePrometheus(whole);
  });

  for (const size of [1, 2, 3, 7, 16, 64, 1000]) {
    it(`gives the same page in chunks of ${size} bytes, lines cut anywhere`, () => assert.equal(streamed(envoy, size), whole));
  }

  it('hands kept bytes over as slices of the chunk, not copies', () => {
    const filter = new MetadataFilter();
    const chunk = own('# TYPE a gauge\na 1\n# TYPE a gauge\nb 2\n');
    const pieces = [...filter.chunk(chunk)];
    assert.deepEqual(pieces.map(String), ['# TYPE a gauge\na 1\n', 'b 2\n']);
    for (const piece of pieces) assert.ok(within(piece, chunk));
  });

  it('after a cut line, copies only the line joined across the chunks; the rest goes on as slices', () => {
    const filter = new MetadataFilter();
    assert.deepEqual([...filter.chunk(Buffer.from('a 1\nb'))].map(String), ['a 1\n']);
    const next = own(' 2\nc 3\nd 4\ne');
    const pieces = [...filter.chunk(next)];
    assert.deepEqual(pieces.map(String), ['b 2\n', 'c 3\nd 4\n']);
    assert.deepEqual(pieces.map((piece) => within(piece, next)), [false, true]);
    assert.deepEqual([...filter.chunk(Buffer.from('e'))], [], 'a line that goes on grows the cut part');
    assert.deepEqual([...filter.end()].map(String), ['ee\n']);
  });

  it('forgets a cut line when told', () => {
    const filter = new MetadataFilter();
    assert.deepEqual([...filter.chunk(Buffer.from('a 1\nb'))].map(String), ['a 1\n']);
    filter.dropPartial();
    assert.deepEqual([...filter.end()], []);
  });

  it('text ends a part with a newline, and leaves an empty part empty', () => {
    const filter = new MetadataFilter();
    assert.equal(filter.text('a 1'), 'a 1\n');
    assert.equal(filter.text(''), '');
    assert.equal(filter.text('# TYPE a gauge'), '# TYPE a gauge\n');
    assert.equal(filter.text('# TYPE a gauge'), '');
  });
});
