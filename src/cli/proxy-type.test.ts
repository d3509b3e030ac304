import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { parseTypeWord, splitProxyArgs } from './proxy-type.ts';

test("splitProxyArgs: the type and the ignored words as Istio's flag parser reads them: an unknown flag without = takes the next word", () => {
  const rows: [string[], { type: string; ignored: string[] }][] = [
    [[], { type: 'sidecar', ignored: [] }],
    [['router'], { type: 'router', ignored: [] }],
    [['router', '--foo', 'x', 'y'], { type: 'router', ignored: ['--foo', 'x', 'y'] }],
    [['--foo'], { type: 'sidecar', ignored: ['--foo'] }],
    [['--foo=1', 'router'], { type: 'router', ignored: ['--foo=1'] }],
    [['--foo', 'x', 'ingress', 'z'], { type: 'ingress', ignored: ['--foo', 'x', 'z'] }],
    [['--foo', '--bar', 'x'], { type: 'sidecar', ignored: ['--foo', '--bar', 'x'] }],
    [['-f', '--', 'router'], { type: 'router', ignored: ['-f'] }],
  ];
  for (const [words, want] of rows) assert.deepEqual(splitProxyArgs(words), want, words.join(' '));
});

test('splitProxyArgs: an unknown flag that would swallow the type is exit 2 naming the flag; a bad type after flags names the argument', () => {
  const refused = (words: string[], message: string) =>
    assert.throws(() => splitProxyArgs(words), (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message, words.join(' '));
  refused(['--foo', 'router'], '--foo: unknown flag before the proxy type "router" (Istio\'s agent would take "router" as its value and run a sidecar): put the type first');
  refused(['--foo=1', 'gateway'], 'proxy: argument \'type\': "gateway" is not one of sidecar, router, ingress, waypoint');
});

test("parseTypeWord: a proxy type or a flag passes (the flag is splitProxyArgs' to name); any other word is commander's choices error", () => {
  assert.deepEqual(['router', '--foo', '-x'].map(parseTypeWord), ['router', '--foo', '-x']);
  assert.throws(() => parseTypeWord('gateway'), { code: 'commander.invalidArgument', message: 'Allowed choices are sidecar, router, ingress, waypoint.' });
});
