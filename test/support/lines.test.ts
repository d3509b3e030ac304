import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { it } from 'node:test';
import { LineLog } from './lines.ts';

it('a wait for a line that can no longer come fails at once, saying why the output ended', async () => {
  const stream = new PassThrough();
  const log = new LineLog<{ msg: string }>(stream, () => 'exit code 2; stderr: port taken');
  const pending = log.waitFor((entry) => entry.msg === 'live', 60_000, 'live');
  stream.end('{"msg":"starting"}\n');
  await assert.rejects(pending, /no more output while waiting for live: exit code 2; stderr: port taken; last lines:\n\{"msg":"starting"\}/);
  await assert.rejects(log.waitFor((entry) => entry.msg === 'later', 60_000, 'later'), /waiting for later: exit code 2/);
  assert.deepEqual(await log.waitFor((entry) => entry.msg === 'starting'), { msg: 'starting' }, 'lines that came still count');
});
