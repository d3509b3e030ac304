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

test("Istio's JSON lines (--log_as_json) reach the log at their level, with component, caller, and a multi-line message whole", async () => {
  const lines: Array<{ level: number; msg: string; envoyComponent?: string; caller?: string }> = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const json = (level: string, msg: string) =>
    JSON.stringify({ time: '2026-11-25T09:00:00.000000Z', level, scope: 'envoy config', msg, caller: 'source/x.cc:7', thread: '3' });
  async function* source() {
    yield json('warning', 'rejected:\nline two');
    yield '{"not": "envoy"}';
  }
  const recent = new RecentErrors();
  await forwardOutput(source(), logger, recent);
  assert.deepEqual(lines.map(({ level, msg, envoyComponent, caller }) => ({ level, msg, envoyComponent, caller })), [
    { level: 40, msg: 'rejected:\nline two', envoyComponent: 'config', caller: 'source/x.cc:7' },
    { level: 30, msg: '{"not": "envoy"}', envoyComponent: undefined, caller: undefined },
  ]);
  assert.ok(recent.includes('line two'));
});
