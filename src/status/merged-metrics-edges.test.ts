import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergedMetrics, oneLine, type MergedParts } from './merged-metrics.ts';
import { MetadataFilter } from './metadata-filter.ts';
import { leading } from './send-body.ts';

const agent = 'istio_agent_up 1\n';

async function page(parts: Partial<MergedParts>): Promise<string> {
  const chunks: string[] = [];
  for await (const chunk of mergedMetrics({ agent, envoyCapBytes: 1 << 20, envoyFailed: () => undefined, ...parts })) chunks.push(String(chunk));
  return chunks.join('');
}

async function* chunksOf(...texts: string[]): AsyncGenerator<Buffer> {
  for (const text of texts) yield Buffer.from(text);
}

describe('mergedMetrics at its edges', () => {
  it('Envoy answering other than 200: its body is let go of (destroyed), not left open', async () => {
    let destroyed = 0;
    const body = Object.assign([Buffer.from('upstream connect error\n')], { destroy: () => void destroyed++ });
    const text = await page({ envoy: { ok: true, status: 503, body } });
    assert.equal(text, `${agent}# Envoy metrics unavailable: HTTP 503\n`);
    assert.equal(destroyed, 1);
  });

  it('a body exactly at the cap is whole: no truncation said', async () => {
    const envoy = 'envoy_a 1\nenvoy_b 2\n';
    const text = await page({ envoy: { ok: true, status: 200, body: chunksOf('envoy_a 1\n', 'envoy_b 2\n') }, envoyCapBytes: Buffer.byteLength(envoy) });
    assert.equal(text, `${agent}${envoy}`);
  });

  it("a failure's comment is one line: runs of white space made one space, cut at 300 characters", () => {
    assert.equal(oneLine('connect\n\n  refused\tnow'), 'connect refused now');
    assert.equal(oneLine('x'.repeat(1000)), 'x'.repeat(300));
  });
});

describe('leading: the first bytes of a streamed body', () => {
  it('stops at the chunk that reaches the count, and hands on the rest', async () => {
    const { head, rest } = await leading(chunksOf('ab', 'cd', 'ef'), 4);
    assert.deepEqual(head.map(String), ['ab', 'cd']);
    assert.deepEqual(String((await rest!.next()).value), 'ef');
  });

  it('a body shorter than the count is all head, with no rest; strings come as bytes', async () => {
    async function* mixed() {
      yield 'ab';
      yield Buffer.from('cd');
    }
    const { head, rest } = await leading(mixed(), 10);
    assert.deepEqual(head, [Buffer.from('ab'), Buffer.from('cd')]);
    assert.equal(rest, undefined);
  });
});

describe('MetadataFilter: what a streamed chunk yields', () => {
  it('never an empty slice: each piece carries bytes, and they add up to the kept text', () => {
    const filter = new MetadataFilter();
    const first = [...filter.chunk(Buffer.from('# TYPE a counter\na 1\n# TYPE a counter\n'))];
    const second = [...filter.chunk(Buffer.from('# TYPE b gauge\nb 2\n# TYPE b gauge\nb 3\nc'))];
    // Repeats first thing in a chunk, one after the other; then a blank line before a repeat.
    const third = [...filter.chunk(Buffer.from('\n# TYPE a counter\n# TYPE b gauge\nd 4\n'))];
    const fourth = [...filter.chunk(Buffer.from('# TYPE a counter\n# TYPE b gauge\ne 5\n\n# TYPE a counter\nf 6\n'))];
    const fifth = [...filter.chunk(Buffer.from('\n# TYPE b gauge\ng 7\n'))];
    const last = [...filter.end()];
    const pieces = [...first, ...second, ...third, ...fourth, ...fifth, ...last];
    assert.ok(pieces.every((piece) => piece.length > 0), JSON.stringify(pieces.map(String)));
    assert.equal(Buffer.concat(pieces).toString(), '# TYPE a counter\na 1\n# TYPE b gauge\nb 2\nb 3\nc\nd 4\ne 5\n\nf 6\n\ng 7\n');
  });
});
