import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bootstrapExtension, bootstrapPath } from './write.ts';

test('a custom bootstrap keeps the extension Envoy reads its format from', () => {
  const cases: [string | undefined, string][] = [
    [undefined, '.json'],
    ['/etc/envoy/custom.json', '.json'],
    ['/etc/envoy/custom.yaml', '.yaml'],
    ['/etc/envoy/custom.YML', '.YML'],
    ['/etc/envoy/custom.pb_text', '.pb_text'],
    ['/etc/envoy/custom.conf', '.json'],
    ['/etc/envoy/custom', '.json'],
  ];
  for (const [file, extension] of cases) assert.equal(bootstrapExtension(file), extension, String(file));
  assert.equal(bootstrapPath('/c', 3, '.yaml'), '/c/envoy-rev3.yaml');
});
