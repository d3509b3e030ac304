import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatHostPort, parseHostPort } from './host-port.ts';

test('parseHostPort accepts host:port and bracketed IPv6', () => {
  assert.deepEqual(parseHostPort('istio-pilot:15010'), { host: 'istio-pilot', port: 15010 });
  assert.deepEqual(parseHostPort('[::1]:15010'), { host: '::1', port: 15010 });
  assert.equal(formatHostPort({ host: '::1', port: 1 }), '[::1]:1');
});

test('parseHostPort explains what is wrong', () => {
  assert.match(String(parseHostPort('istio-pilot')), /not host:port/);
  assert.match(String(parseHostPort('a:70000')), /out of range/);
  assert.match(String(parseHostPort('a:0')), /out of range/);
  assert.match(String(parseHostPort('::1:80')), /not host:port/);
});
