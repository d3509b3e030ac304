import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseResourceName } from './resource-names.ts';

test('parseResourceName: the names istiod asks for', () => {
  const table: Array<[string, string]> = [
    ['default', 'cert-dir'],
    ['ROOTCA', 'cert-dir'],
    ['file-root:system', 'system-root'],
    ['file-root:/etc/certs/root.pem', 'file-root'],
    ['file-cert:/etc/certs/a.pem~/etc/certs/a.key', 'file-cert'],
    ['kubernetes://my-secret', 'unknown'],
    ['file-cert:/a.pem', 'unknown'],
    ['file-cert:a.pem~/b.key', 'unknown'],
    ['file-cert:/a.pem~b.key', 'unknown'],
    ['file-cert:/a.pem~', 'unknown'],
    ['file-cert:/a.pem~/b.key~/c.key', 'unknown'],
    ['file-root:relative.pem', 'unknown'],
    ['', 'unknown'],
  ];
  for (const [name, kind] of table) assert.equal(parseResourceName(name).kind, kind, name);
  const unknown = 'unknown resource name; this agent serves default, ROOTCA, file-cert:<chain>~<key>, file-root:<path> and file-root:system';
  assert.deepEqual(parseResourceName('kubernetes://my-secret'), { kind: 'unknown', reason: unknown });
  assert.deepEqual(parseResourceName('kubernetes://a~/b'), { kind: 'unknown', reason: unknown }, 'a ~ does not make a file-cert');
  assert.deepEqual(parseResourceName('file-cert:/a.pem'), { kind: 'unknown', reason: 'file-cert: takes <chain-path>~<key-path>' });
  assert.deepEqual(
    parseResourceName('file-cert:/x/c.pem~k.pem'),
    { kind: 'unknown', reason: 'file path "k.pem" is not absolute' },
    'the key half is checked too',
  );
  assert.deepEqual(parseResourceName('file-cert:c.pem~/x/k.pem'), { kind: 'unknown', reason: 'file path "c.pem" is not absolute' });
  assert.deepEqual(parseResourceName('file-root:/x/root.pem'), { kind: 'file-root', path: '/x/root.pem' });
  assert.deepEqual(parseResourceName('file-cert:/x/c.pem~/x/k.pem'), { kind: 'file-cert', cert: '/x/c.pem', key: '/x/k.pem' });
});
