import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bool, componentLevels, concurrency, count, envoyLogLevels, maxConcurrency, port, secondsOrDuration, splitEnvoyLogLevel } from './parse-values.ts';

/** Accepts `good` (with the value it gives) and refuses `bad` with `message`. */
function table<T>(parse: (text: string) => T, good: [string, T][], bad: string[], message: string | ((text: string) => string)): void {
  for (const [text, value] of good) assert.deepEqual(parse(text), value, JSON.stringify(text));
  for (const text of bad) assert.throws(() => parse(text), { message: typeof message === 'string' ? message : message(text) }, JSON.stringify(text));
}

test('port: whole numbers 0-65535 only', () => {
  table(port, [['0', 0], ['15000', 15000], ['65535', 65535]], ['65536', '70000', '', '-1', '1.5', '80x', 'x80', ' 80', '1e3'], 'not a port (0-65535)');
});

test('count: non-negative whole numbers only', () => {
  table(count, [['0', 0], ['10', 10]], ['', '-1', '1.5', '10x', 'x10', ' 1'], 'not a non-negative integer');
});

test("bool: Go's strconv.ParseBool, as Istio reads booleans (t, T, True, …), whole words only", () => {
  const good: [string, boolean][] = [
    ['1', true],
    ['t', true],
    ['T', true],
    ['TRUE', true],
    ['true', true],
    ['True', true],
    ['0', false],
    ['f', false],
    ['F', false],
    ['FALSE', false],
    ['false', false],
    ['False', false],
  ];
  table(bool, good, ['', 'yes', 'tRUE', 'xtrue', 'true1', 'falsey', '01', '10', ' true'], (text) => `"${text}" is not a boolean (true or false)`);
});

test('secondsOrDuration: whole seconds or a Go duration', () => {
  table(secondsOrDuration, [['5', 5000], ['5s', 5000], ['1m', 60_000]], ['5x', 'x5'], 'not a Go duration (e.g. 45s, 1m0s, 500ms)');
});

test('componentLevels: component:level pairs, spaces and empty items allowed, each part checked', () => {
  for (const text of ['upstream:debug', 'upstream:debug, connection:trace', 'upstream:debug, ', ' , config:warn,']) assert.equal(componentLevels(text), text);
  const bad: [string, string][] = [
    ['upstream', '"upstream" is not component:level'],
    ['upstream:', '"upstream:" is not component:level'],
    ['a:b:c', '"a:b:c" is not component:level'],
    ['nosuch:debug', '"nosuch" is not an Envoy log component (e.g. upstream, http, config)'],
    ['upstream:verbose', '"verbose" is not an Envoy log level (trace, debug, info, warning, warn, error, critical, off)'],
  ];
  for (const [text, message] of bad) assert.throws(() => componentLevels(text), { message }, text);
});

test("--proxyLogLevel: a level, with component:level parts after it as Istio's splitComponentLog splits them", () => {
  for (const [text, level, components] of [
    ['warning', 'warning', undefined],
    ['info,misc:error', 'info', 'misc:error'],
    ['misc:error,debug,upstream:trace', 'debug', 'misc:error,upstream:trace'],
    ['misc:error', undefined, 'misc:error'],
  ] as const) {
    assert.equal(envoyLogLevels(text), text);
    assert.deepEqual(splitEnvoyLogLevel(text), { level, components }, text);
  }
  assert.throws(() => envoyLogLevels('loud'), /"loud" is not an Envoy log level/);
  assert.throws(() => envoyLogLevels('info,debug'), /names more than one level/);
  assert.throws(() => envoyLogLevels('info,nosuch:error'), /"nosuch" is not an Envoy log component/);
});

test('concurrency: up to maxConcurrency worker threads; one more is refused, saying 0 means one per core', () => {
  table(concurrency, [['0', 0], [String(maxConcurrency), maxConcurrency]], [String(maxConcurrency + 1)], `more than ${maxConcurrency} worker threads (0: one per core)`);
});

test('log levels: the messages list the levels, comma-separated; parts are trimmed before they are told apart', () => {
  const levels = 'trace, debug, info, warning, warn, error, critical, off';
  assert.throws(() => envoyLogLevels('loud'), { message: `"loud" is not an Envoy log level (${levels})` });
  assert.throws(() => componentLevels('misc:loud'), { message: `"loud" is not an Envoy log level (${levels})` });
  assert.throws(() => splitEnvoyLogLevel('info, debug'), { message: '"info, debug" names more than one level (info, debug)' });
  assert.deepEqual(splitEnvoyLogLevel(' info , misc:error ,, upstream:debug '), { level: 'info', components: 'misc:error,upstream:debug' });
});
