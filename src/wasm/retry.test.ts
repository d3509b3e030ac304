import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import type { HttpAnswer } from './http-get.ts';
import { retryableStatus, withRetries } from './retry.ts';

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

  it('which statuses are retried: 5xx but 501, 505 and 511; nothing below 500', () => {
    const table: [number, boolean][] = [
      [499, false],
      [500, true],
      [501, false],
      [502, true],
      [504, true],
      [505, false],
      [506, true],
      [511, false],
      [599, true],
      [304, false],
    ];
    for (const [status, retried] of table) assert.equal(retryableStatus(status), retried, String(status));
  });

  it('a retry due exactly at the deadline still starts; no attempts at all names none', async () => {
    const { result, calls } = await run([answer(502)], { attempts: 5, deadlineMs: 500 });
    await assert.rejects(result, { message: 'failed after 2 attempt(s): http://m.example/x: HTTP 502' });
    assert.equal(calls(), 2);
    const none = await run([answer(200)], { attempts: 0 });
    await assert.rejects(none.result, { message: 'failed after 0 attempt(s): no attempt' });
    assert.equal(none.calls(), 0);
  });

  it('one attempt: no sleep after it', async () => {
    const { result, slept } = await run([new Error('ECONNRESET')], { attempts: 1 });
    await assert.rejects(result, { message: 'failed after 1 attempt(s): ECONNRESET' });
    assert.deepEqual(slept, []);
  });
});
