import assert from 'node:assert/strict';
import { test } from 'node:test';
import { healthProbe } from './probe.ts';

const network = { destination: '127.0.0.1', localAddress: '127.0.0.1', http2: false, keepAlive: false };
const exec = (command: string[], timeoutMs = 5000) => healthProbe({ kind: 'exec', command, timeoutMs }, network)();

test('an exec probe passes on exit 0 only; a failure or a timeout says which', async () => {
  assert.equal(await exec(['true']), undefined);
  assert.equal(await exec(['false']), 'exec probe failed: exit code 1');
  assert.equal(await exec(['sleep', '5'], 50), 'exec probe timed out after 50 ms');
  assert.match((await exec(['/nonexistent/check']))!, /^exec probe failed: /);
});

test('an app probe passes on 2xx and 3xx, as the kubelet\'s; a refused connect fails with the reason', async () => {
  const tcp = healthProbe({ kind: 'app', probe: { action: { kind: 'tcp', host: '127.0.0.1', port: 1 }, timeoutMs: 1000 } }, network);
  assert.match((await tcp())!, /^tcp probe failed: /);
});
