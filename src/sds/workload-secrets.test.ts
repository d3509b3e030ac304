import assert from 'node:assert/strict';
import { test } from 'node:test';
import { files, pems } from '../../test/support/self-signed.ts';
import { SecretStore } from './secret-store.ts';
import { storeCertDir } from './workload-secrets.ts';

test('storeCertDir: a chain without its key, or no root, leaves that name waiting with the reason', () => {
  const store = new SecretStore();
  storeCertDir(store, '/certs', [{ path: '/certs/cert-chain.pem', content: pems.a.cert }, { path: '/certs/key.pem' }, { path: '/certs/root-cert.pem' }]);
  assert.equal(store.get('default'), undefined);
  assert.equal(store.problem('default'), 'no /certs/cert-chain.pem and /certs/key.pem yet');
  assert.equal(store.problem('ROOTCA'), 'no /certs/root-cert.pem yet');
  storeCertDir(store, '/certs', [{ path: '/certs/key.pem', content: pems.a.key }]);
  assert.equal(store.get('default'), undefined, 'a key without its chain');
  storeCertDir(store, '/certs', files(pems.b, pems.b.cert));
  assert.deepEqual((store.get('ROOTCA')!.material as { trustedCa: Buffer }).trustedCa, pems.b.cert);
  assert.deepEqual(store.get('ROOTCA')!.files, ['/certs/root-cert.pem']);
  assert.deepEqual(store.get('default')!.files, ['/certs/cert-chain.pem', '/certs/key.pem']);
  storeCertDir(store, '/certs', []);
  assert.equal(store.get('default'), undefined, 'files gone: the names are taken back');
  assert.equal(store.get('ROOTCA'), undefined);
});
