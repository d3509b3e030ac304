import assert from 'node:assert/strict';
import { it } from 'node:test';
import { pollUntil } from './poll.ts';

it('returns the first accepted value, probing again after a miss or a throw', async () => {
  const values = [() => 1, () => { throw new Error('not up'); }, () => 3];
  let probes = 0;
  const found = await pollUntil(() => values[probes++]!(), { what: 'three', accept: (value) => value === 3, intervalMs: 1 });
  assert.equal(found, 3);
  assert.equal(probes, 3);
});

it('fails naming what was awaited and the last value seen', async () => {
  await assert.rejects(pollUntil(() => ({ status: 503 }), { what: 'a 200', accept: (answer) => answer.status === 200, timeoutMs: 5, intervalMs: 1 }), {
    message: /^timed out after 5 ms waiting for a 200; last: \{"status":503\}$/,
  });
  await assert.rejects(
    pollUntil(() => Promise.reject(new Error('ECONNREFUSED')), { what: 'the port', timeoutMs: 5, intervalMs: 1 }),
    /last: threw ECONNREFUSED$/,
  );
});

it('a falsy value is not accepted by default', async () => {
  await assert.rejects(pollUntil(() => 0, { what: 'a count', timeoutMs: 5, intervalMs: 1, show: String }), /last: 0$/);
});
