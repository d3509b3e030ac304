import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SecretStore, type SecretMaterial, type StoredSecret } from './secret-store.ts';

const secret = (material: SecretMaterial, serial = '01'): StoredSecret => ({ material, serial, expiresAt: 0, files: [] });
const identity = (chain: string, key: string): SecretMaterial => ({ kind: 'tls-certificate', chain: Buffer.from(chain), key: Buffer.from(key) });
const roots = (trustedCa: string): SecretMaterial => ({ kind: 'validation-context', trustedCa: Buffer.from(trustedCa) });

/** A store with one listener: returns the names it heard, in order. */
function watched() {
  const store = new SecretStore();
  const heard: string[] = [];
  store.onChange((name) => heard.push(name));
  return { store, heard };
}

test('a renewed certificate that keeps its key is a change (cert-manager rotationPolicy: Never)', () => {
  const { store, heard } = watched();
  store.put('default', secret(identity('chain-1', 'key')));
  store.put('default', secret(identity('chain-2', 'key'), '02'));
  assert.deepEqual(heard, ['default', 'default']);
  assert.equal(store.get('default')!.serial, '02');
  assert.deepEqual(store.get('default')!.material, identity('chain-2', 'key'));
});

test('a new key under the same chain is a change; re-reading the same bytes is not', () => {
  const { store, heard } = watched();
  store.put('default', secret(identity('chain', 'key-1')));
  store.put('default', secret(identity('chain', 'key-1')));
  assert.deepEqual(heard, ['default'], 'same bytes: nobody hears');
  store.put('default', secret(identity('chain', 'key-2')));
  assert.deepEqual(heard, ['default', 'default']);
});

test('bytes moved across the chain/key boundary are a change', () => {
  const { store, heard } = watched();
  store.put('default', secret(identity('chainA', 'key')));
  store.put('default', secret(identity('chain', 'Akey')));
  assert.equal(heard.length, 2);
});

test('new roots are a change; the same roots are not; the kind is part of the identity of the bytes', () => {
  const { store, heard } = watched();
  store.put('ROOTCA', secret(roots('root-1')));
  store.put('ROOTCA', secret(roots('root-1')));
  store.put('ROOTCA', secret(roots('root-2')));
  assert.deepEqual(heard, ['ROOTCA', 'ROOTCA']);
  const a = new SecretStore();
  a.put('x', secret(roots('same')));
  const b = new SecretStore();
  b.put('x', secret(identity('same', '')));
  assert.notEqual(a.get('x')!.hash, b.get('x')!.hash);
});

test('names are independent; a problem is kept beside the last good secret until the next put', () => {
  const { store, heard } = watched();
  store.put('a', secret(roots('r')));
  store.put('b', secret(roots('r')));
  assert.deepEqual(heard, ['a', 'b']);
  store.setProblem('a', 'file gone');
  assert.equal(store.problem('a'), 'file gone');
  assert.ok(store.get('a'), 'the last good secret still serves');
  store.put('a', secret(roots('r')));
  assert.equal(store.problem('a'), undefined, 'a good put clears the problem, even of the same bytes');
  store.remove('b', 'removed');
  assert.equal(store.get('b'), undefined);
  assert.equal(store.problem('b'), 'removed');
  assert.deepEqual([...store.entries()].map(([name]) => name), ['a']);
});

test('a listener that unsubscribed hears nothing more', () => {
  const store = new SecretStore();
  const heard: string[] = [];
  const stop = store.onChange((name) => heard.push(name));
  store.put('a', secret(roots('1')));
  stop();
  store.put('a', secret(roots('2')));
  assert.deepEqual(heard, ['a']);
});

test('forget drops a name and its problem, and only that name; a later put of the same bytes is heard again', () => {
  const { store, heard } = watched();
  store.put('file-root:/a', secret(roots('r')));
  store.put('file-root:/b', secret(roots('r')));
  store.setProblem('file-root:/a', 'file gone');
  store.setProblem('file-root:/b', 'file gone');
  store.forget('file-root:/a');
  assert.equal(store.get('file-root:/a'), undefined);
  assert.equal(store.problem('file-root:/a'), undefined, 'nobody holds it: no problem to report either');
  assert.ok(store.get('file-root:/b'));
  assert.equal(store.problem('file-root:/b'), 'file gone');
  store.put('file-root:/a', secret(roots('r')));
  assert.deepEqual(heard, ['file-root:/a', 'file-root:/b', 'file-root:/a'], 'the same bytes after forget are a new secret');
});
