import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalPath, isLoopbackPeer } from './access.ts';

test('canonicalPath passes only /segment/... paths, with the query cut off, and refuses every other spelling', () => {
  const cases: [string, string | undefined][] = [
    ['/healthz/ready', '/healthz/ready'],
    ['/stats/prometheus?x=1', '/stats/prometheus'],
    ['/quitquitquit', '/quitquitquit'],
    ['/a_b-C9', '/a_b-C9'],
    ['/', undefined],
    ['', undefined],
    ['?x', undefined],
    ['//quitquitquit', undefined],
    ['x/quitquitquit', undefined],
    ['http://host/quitquitquit', undefined],
    ['/healthz/../quitquitquit', undefined],
    ['/healthz/./ready', undefined],
    ['/healthz/ready/', undefined],
    ['/quit%71uitquit', undefined],
    ['/healthz\\ready', undefined],
    ['/healthz;x/ready', undefined],
    ['/healthz/ready#x', undefined],
    ['/healthz/ready ', undefined],
  ];
  for (const [target, expected] of cases) assert.equal(canonicalPath(target), expected, JSON.stringify(target));
});

test('isLoopbackPeer: 127.0.0.1 and ::1 (also IPv4-mapped) only; not the rest of 127/8, not a Unix socket', () => {
  const cases: [string | undefined, boolean][] = [
    ['127.0.0.1', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['127.0.0.6', false],
    ['::ffff:127.0.0.6', false],
    ['10.1.2.3', false],
    ['0.0.0.0', false],
    ['', false],
    [undefined, false],
  ];
  for (const [address, expected] of cases) assert.equal(isLoopbackPeer(address), expected, String(address));
});
