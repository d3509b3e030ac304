import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { forwardOutput, RecentErrors } from './output.ts';

async function* linesOf(lines: string[]): AsyncGenerator<string> {
  yield* lines;
}

/** Forwards `lines` (no process: an async iterable) and returns what was logged, and what was kept to explain an exit. */
async function forward(lines: string[]) {
  const logged: Array<{ level: number; msg: string; envoyComponent?: string; caller?: string }> = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  const recent = new RecentErrors(10);
  await forwardOutput(linesOf(lines), logger, recent);
  return { logged, recent };
}

test("each of Envoy's levels maps to the log's; only warnings and worse, and unformatted lines, are kept to explain an exit", async () => {
  const cases: { level: string; pino: number; kept: boolean }[] = [
    { level: 'trace', pino: 10, kept: false },
    { level: 'debug', pino: 20, kept: false },
    { level: 'info', pino: 30, kept: false },
    { level: 'warning', pino: 40, kept: true },
    { level: 'error', pino: 50, kept: true },
    { level: 'critical', pino: 60, kept: true },
    { level: 'unheard', pino: 30, kept: false },
  ];
  for (const { level, pino: want, kept } of cases) {
    const { logged, recent } = await forward([`[2026-11-25 09:00:00.000][7][${level}][upstream-x] [a.cc:1] said ${level}`]);
    assert.deepEqual(logged.map((line) => [line.level, line.msg, line.envoyComponent]), [[want, `said ${level}`, 'upstream-x']], level);
    assert.equal(recent.toString(), kept ? `said ${level}` : '', level);
  }
});

test("Envoy's prefix only at the start of a line, a pid of any length, any spacing after the component and the location", async () => {
  const { logged } = await forward([
    '[2026-11-25 09:00:00.000][123456][error][main]tight',
    '[2026-11-25 09:00:00.000][42][error][main] [a.cc:1]tight too',
    'said [t][1][error][main] boom',
  ]);
  assert.deepEqual(logged.map((line) => [line.level, line.msg]), [[50, 'tight'], [50, 'tight too'], [30, 'said [t][1][error][main] boom']]);
});

test('a line without the source location is still parsed; a line that is not Envoy\'s is logged whole at info and kept', async () => {
  const { logged, recent } = await forward(['[2026-11-25 09:00:00.000][7][error][main] no location', 'plain words']);
  assert.deepEqual(logged.map((line) => [line.level, line.msg, line.envoyComponent]), [[50, 'no location', 'main'], [30, 'plain words', undefined]]);
  assert.equal(recent.toString(), 'no location | plain words');
});

test('a line with a Unicode line or paragraph separator inside (not a line end to the reader) is logged whole: nothing after it is dropped', async () => {
  const lines = ['[2026-11-25 09:00:00.000][7][error][main] first\u2028second', '[2026-11-25 09:00:00.000][7][error][main] one\u2029two'];
  const { logged } = await forward(lines);
  assert.deepEqual(logged.map((line) => [line.level, line.msg]), [[30, lines[0]], [30, lines[1]]]);
});

test("Istio's JSON lines: scope without its 'envoy ' prefix, caller only when there is one; JSON without a level or msg is a plain line", async () => {
  const lines = [
    '{"level":"warning","msg":"one","scope":"envoy upstream","caller":"a.cc:1"}',
    '{"level":"info","msg":"two","scope":"envoyish"}',
    '{"level":"error","msg":"no scope","caller":5}',
    '{"level":"info","msg":"inner","scope":"my envoy x"}',
    '{"level":"info","msg":3}',
    '{"msg":"no level"}',
    '{"level":"info","msg":"broken',
    '["level"]',
  ];
  const { logged } = await forward(lines);
  assert.deepEqual(logged.map((line) => [line.level, line.msg, line.envoyComponent, line.caller]), [
    [40, 'one', 'upstream', 'a.cc:1'],
    [30, 'two', 'envoyish', undefined],
    [50, 'no scope', '', undefined],
    [30, 'inner', 'my envoy x', undefined],
    [30, lines[4], undefined, undefined],
    [30, lines[5], undefined, undefined],
    [30, lines[6], undefined, undefined],
    [30, lines[7], undefined, undefined],
  ]);
});

test('RecentErrors keeps the last `size` lines (5 by default), finds the last match, and joins them for the detail', () => {
  const recent = new RecentErrors();
  for (let i = 1; i <= 7; i++) recent.add(`line ${i}`);
  assert.equal(recent.toString(), 'line 3 | line 4 | line 5 | line 6 | line 7');
  assert.equal(recent.includes('line 2'), false);
  assert.equal(recent.includes('line 3'), true);
  assert.equal(recent.find(/line [35]/), 'line 5');
  assert.equal(recent.find(/line 9/), undefined);
  const two = new RecentErrors(2);
  for (const line of ['a', 'b', 'c']) two.add(line);
  assert.equal(two.toString(), 'b | c');
});

test("a line that is not Envoy's log goes to the raw sink as it is when taken (an access log to /dev/stderr), else to the log; kept either way", async () => {
  const logged: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  const recent = new RecentErrors(10);
  const raw: string[] = [];
  const access = '[2026-11-25T09:00:00.000Z] "GET /x HTTP/1.1" 200 - 0 5 1 0 "-" "curl" "-" "-" "-"';
  const lines = ['before live', '[2026-11-25 09:00:00.000][7][warning][main] careful', access];
  await forwardOutput(linesOf(lines), logger, recent, (line) => line !== 'before live' && raw.push(line) > 0);
  assert.deepEqual(raw, [access]);
  assert.deepEqual(logged.map((line) => [line.level, line.msg]), [[30, 'before live'], [40, 'careful']]);
  assert.equal(recent.toString(), `before live | careful | ${access}`);
});
