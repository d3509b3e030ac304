import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import type { HttpAnswer } from './http-get.ts';
import { withRetries } from './retry.ts';

const answer = (status: number): HttpAnswer => ({ status, headers: {}, body: Buffer.alloc(0), url: 'http://m.example/x' });

/** Runs withRetries, moving the fake clock whenever it sleeps. */
async function run(script: (HttpAnswer | Error)[], options: { attempts: number; deadlineMs?: number }) {
  const clock = new FakeClock(0);
  const slept: number[] = [];
  const sleep = clock.sleep.bind(clock);
  clock.sleep = (ms, signal) => {
    slept.push(ms);
    const done = sleep(ms, signal);
    clock.advance(ms);
    return done;
  };
  let calls = 0;
  const result = withRetries(async () => {
    const next = script[Math.min(calls++, script.length - 1)]!;
    if (next instanceof Error) throw next;
    return next;
  }, { attempts: options.attempts, clock, random: () => 0.5, deadline: options.deadlineMs ?? 60_000 });
  return { result, calls: () => calls, slept };
}

describe('Wasm fetch retries', () => {
  it('retries 5xx and errors with growing backoff, then answers', async () => {
    const { result, calls, slept } = await run([answer(503), new Error('ECONNREFUSED'), answer(200)], { attempts: 5 });
    assert.equal((await result).status, 200);
    assert.equal(calls(), 3);
    assert.deepEqual(slept, [500, 1000]);
  });

  it('gives up after the attempts, naming the last error', async () => {
    const { result, calls } = await run([answer(500)], { attempts: 5 });
    await assert.rejects(result, /failed after 5 attempt\(s\): .*HTTP 500/);
    assert.equal(calls(), 5);
  });

  it('does not retry answers that will not change', async () => {
    for (const status of [404, 401, 501]) {
      const { result, calls } = await run([answer(status)], { attempts: 5 });
      assert.equal((await result).status, status);
      assert.equal(calls(), 1);
    }
  });

  it('starts no retry past the deadline', async () => {
    const { result, calls } = await run([answer(502)], { attempts: 5, deadlineMs: 1200 });
    await assert.rejects(result);
    assert.equal(calls(), 2, '0 ms, then 500 ms; a third at 1500 ms would pass the deadline');
  });

  it('hands a TLS handshake answered in plain HTTP back at once, for the plain-HTTP fallback', async () => {
    const plain = Object.assign(new Error('ssl3_get_record:wrong version number'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER' });
    const { result, calls } = await run([plain], { attempts: 5 });
    await assert.rejects(result, /wrong version number/);
    assert.equal(calls(), 1);
  });
});
