import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import pino from 'pino';
import { FakeClock } from '../../shared/clock.ts';
import { createLogger } from '../../shared/log.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { SpareUpstreams } from './spare-upstreams.ts';

/** An upstream call with a fake stream and session: events are emitted by the test, close() is counted. */
function fakeUpstream() {
  const session = Object.assign(new EventEmitter(), { closed: false, destroyed: false });
  const stream = Object.assign(new EventEmitter(), { closed: false, destroyed: false, session });
  const upstream = { stream, credential: 'none', held: 'none', closes: 0, close() { this.closes++; } };
  return upstream as typeof upstream & UpstreamStream;
}

const spares = (clock = new FakeClock()) => ({ clock, spares: new SpareUpstreams(clock, createLogger({ level: 'fatal' })) });

describe('SpareUpstreams', () => {
  it('hands a kept call to the next stream of its mode once, and to no other mode', async () => {
    const { spares: kept } = spares();
    const upstream = fakeUpstream();
    kept.keep('sotw', upstream);
    assert.equal(kept.take('delta'), undefined);
    assert.equal(await kept.take('sotw'), upstream);
    assert.equal(kept.take('sotw'), undefined);
    assert.equal(upstream.closes, 0);
  });

  it('closes a spare no stream took within its time to live', () => {
    const { clock, spares: kept } = spares();
    const upstream = fakeUpstream();
    kept.keep('sotw', upstream);
    clock.advance(9_999);
    assert.equal(upstream.closes, 0);
    clock.advance(1);
    assert.equal(upstream.closes, 1);
    assert.equal(kept.take('sotw'), undefined);
  });

  it('a second spare of a mode closes the first', () => {
    const { spares: kept } = spares();
    const [first, second] = [fakeUpstream(), fakeUpstream()];
    kept.keep('delta', first);
    kept.keep('delta', second);
    assert.equal(first.closes, 1);
    assert.equal(second.closes, 0);
  });

  for (const [what, end] of [
    ['the server ends the call with trailers', (up: ReturnType<typeof fakeUpstream>) => up.stream.emit('trailers', {})],
    ['a trailers-only error answers it', (up: ReturnType<typeof fakeUpstream>) => up.stream.emit('response', { ':status': 200, 'grpc-status': '14' })],
    ['the stream closes', (up: ReturnType<typeof fakeUpstream>) => up.stream.emit('close')],
    ['the stream errors', (up: ReturnType<typeof fakeUpstream>) => up.stream.emit('error', new Error('reset'))],
    ['the connection says GOAWAY', (up: ReturnType<typeof fakeUpstream>) => up.stream.session.emit('goaway')],
    ['the connection closes', (up: ReturnType<typeof fakeUpstream>) => up.stream.session.emit('close')],
  ] as const) {
    it(`a spare is dropped and closed when ${what}, never handed to the next stream`, () => {
      const { spares: kept } = spares();
      const upstream = fakeUpstream();
      kept.keep('sotw', upstream);
      end(upstream);
      assert.equal(upstream.closes, 1);
      assert.equal(kept.take('sotw'), undefined);
    });
  }

  for (const [what, gone] of [
    ['its connection closed', (up: ReturnType<typeof fakeUpstream>) => (up.stream.session.closed = true)],
    ['its connection was destroyed', (up: ReturnType<typeof fakeUpstream>) => (up.stream.session.destroyed = true)],
    ['its stream closed', (up: ReturnType<typeof fakeUpstream>) => (up.stream.closed = true)],
    ['its stream was destroyed', (up: ReturnType<typeof fakeUpstream>) => (up.stream.destroyed = true)],
  ] as const) {
    it(`a spare whose ${what.slice(4)} unseen is not handed out: ${what}`, () => {
      const { spares: kept } = spares();
      const upstream = fakeUpstream();
      kept.keep('sotw', upstream);
      gone(upstream);
      assert.equal(kept.take('sotw'), undefined);
      assert.equal(upstream.closes, 1);
    });
  }

  it("the first spare's late events do not drop the second one kept for its mode", () => {
    const { spares: kept } = spares();
    const [first, second] = [fakeUpstream(), fakeUpstream()];
    kept.keep('sotw', first);
    kept.keep('sotw', second);
    first.stream.emit('close');
    assert.equal(second.closes, 0);
  });

  it('a spare whose call the server answered with headers only (no status) stays', async () => {
    const { spares: kept } = spares();
    const upstream = fakeUpstream();
    kept.keep('sotw', upstream);
    upstream.stream.emit('response', { ':status': 200 });
    assert.equal(await kept.take('sotw'), upstream);
  });

  it('a spare whose stream is already destroyed (no session left) is kept without fault and not handed out', () => {
    const { spares: kept } = spares();
    const upstream = fakeUpstream();
    Object.assign(upstream.stream, { session: undefined, destroyed: true });
    kept.keep('sotw', upstream);
    assert.equal(kept.take('sotw'), undefined);
    assert.equal(upstream.closes, 1);
  });

  it('says at debug level which mode took a spare', async () => {
    const lines: { mode?: string; msg?: string }[] = [];
    const kept = new SpareUpstreams(new FakeClock(), pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) }));
    kept.keep('delta', fakeUpstream());
    await kept.take('delta');
    assert.deepEqual(lines.map(({ mode, msg }) => ({ mode, msg })), [{ mode: 'delta', msg: 'a new stream takes the connection the redial opened' }]);
  });

  it('dropAll closes every mode\'s spare; a dropped mode is not handed out', () => {
    const { spares: kept } = spares();
    const [sotw, delta] = [fakeUpstream(), fakeUpstream()];
    kept.keep('sotw', sotw);
    kept.keep('delta', delta);
    kept.dropAll();
    assert.deepEqual([sotw.closes, delta.closes], [1, 1]);
    assert.equal(kept.take('sotw'), undefined);
    assert.equal(kept.take('delta'), undefined);
  });

  it('a taken or dropped spare leaves no expiry timer behind', async () => {
    const { clock, spares: kept } = spares();
    const upstream = fakeUpstream();
    kept.keep('sotw', upstream);
    await kept.take('sotw');
    assert.equal(clock.pending, 0);
    kept.keep('delta', fakeUpstream());
    kept.drop('delta');
    assert.equal(clock.pending, 0);
    clock.advance(20_000);
    assert.equal(upstream.closes, 0);
  });

  it("a stream that took the spare is not closed by the spare's later events", async () => {
    const { spares: kept } = spares();
    const upstream = fakeUpstream();
    kept.keep('sotw', upstream);
    await kept.take('sotw');
    upstream.stream.emit('trailers', {});
    assert.equal(upstream.closes, 0);
  });
});
