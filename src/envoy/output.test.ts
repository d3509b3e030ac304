import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execa } from 'execa';
import pino from 'pino';
import { forwardOutput, RecentErrors } from './output.ts';

test("a child's output reaches the log line by line through execa, at Envoy's level, tagged, both streams, and after a failing exit", async () => {
  const lines: Array<{ level: number; msg: string; epoch: number; envoyComponent?: string }> = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(JSON.parse(line)) }).child({ epoch: 3 });
  const script = [
    "echo '[2026-11-25 09:00:00.000][1][info][main] [server.cc:1] starting'",
    "echo '[2026-11-25 09:00:00.001][1][warning][config] [x.cc:2] slow'",
    "echo 'previous envoy process is still initializing' >&2",
    'exit 1',
  ].join('; ');
  const child = execa('sh', ['-c', script], { reject: false, buffer: false, all: true, stdin: 'ignore' });
  const recent = new RecentErrors();
  await forwardOutput(child.iterable({ from: 'all' }), logger, recent);
  assert.equal((await child).exitCode, 1);
  const byMessage = Object.fromEntries(lines.map((line) => [line.msg, line]));
  assert.deepEqual([byMessage.starting?.level, byMessage.starting?.envoyComponent, byMessage.starting?.epoch], [30, 'main', 3]);
  assert.equal(byMessage.slow?.level, 40);
  assert.equal(byMessage['previous envoy process is still initializing']?.level, 30);
  assert.ok(recent.includes('previous envoy process is still initializing'), 'an unformatted line is kept to explain the exit');
  assert.ok(recent.includes('slow'));
});
