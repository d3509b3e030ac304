import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../shared/log.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { changedPaths, feedCertDir, restartNeededFor, type CertRotation } from './cert-dir-feed.ts';
import { SecretStore } from './secret-store.ts';

/** Two self-signed certificates with keys, made once (openssl; no clock involved). */
const pems = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'feed-test-'));
  const make = (name: string) => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.crt`), '-subj', `/CN=${name}`, '-days', '1'], { stdio: 'ignore' });
    return { cert: readFileSync(join(dir, `${name}.crt`)), key: readFileSync(join(dir, `${name}.key`)) };
  };
  const made = { a: make('a'), b: make('b') };
  rmSync(dir, { recursive: true, force: true });
  return made;
})();

const files = (pair: { cert: Buffer; key: Buffer }, root = pems.a.cert): FileRead[] => [
  { path: '/certs/cert-chain.pem', content: pair.cert }, { path: '/certs/key.pem', content: pair.key }, { path: '/certs/root-cert.pem', content: root },
];

function feed(rotation: CertRotation, covered: string[]) {
  const store = new SecretStore();
  const restarts: string[] = [];
  const onFiles = feedCertDir({ store, certDir: '/certs', rotation, coveredFiles: () => new Set(covered), restart: (hash) => restarts.push(hash), logger: silentLogger });
  return { store, restarts, onFiles };
}

test('feedCertDir: the first set starts Envoy; later sets restart only for files SDS does not deliver', () => {
  const all = ['/certs/cert-chain.pem', '/certs/key.pem', '/certs/root-cert.pem'];
  const table: Array<[CertRotation, string[], number]> = [
    ['auto', all, 1],
    ['auto', ['/certs/root-cert.pem'], 2],
    ['auto', [], 2],
    ['sds', [], 1],
    ['restart', all, 2],
  ];
  for (const [rotation, covered, restarts] of table) {
    const run = feed(rotation, covered);
    run.onFiles('h1', files(pems.a));
    run.onFiles('h2', files(pems.b));
    assert.equal(run.restarts.length, restarts, `${rotation} with ${covered.length} covered`);
    assert.equal(run.store.get('default')!.material.kind, 'tls-certificate');
    assert.equal((run.store.get('default')!.material as { chain: Buffer }).chain, files(pems.b)[0]!.content, 'the store has the checked bytes');
  }
});

test('feedCertDir: absent files leave default and ROOTCA waiting, with the reason', () => {
  const run = feed('auto', []);
  run.onFiles('h0', [{ path: '/certs/cert-chain.pem' }, { path: '/certs/key.pem' }, { path: '/certs/root-cert.pem', content: pems.a.cert }]);
  assert.equal(run.store.get('default'), undefined);
  assert.match(run.store.problem('default')!, /no \/certs\/cert-chain.pem/);
  assert.ok(run.store.get('ROOTCA'));
});

test('changedPaths and restartNeededFor', () => {
  assert.deepEqual(changedPaths(files(pems.a), files(pems.b)), ['/certs/cert-chain.pem', '/certs/key.pem']);
  assert.deepEqual(changedPaths(files(pems.a), [{ path: '/certs/cert-chain.pem' }, ...files(pems.a).slice(1)]), ['/certs/cert-chain.pem']);
  assert.deepEqual(restartNeededFor('auto', ['/a', '/b'], new Set(['/a'])), ['/b']);
  assert.deepEqual(restartNeededFor('sds', ['/a'], new Set()), []);
  assert.deepEqual(restartNeededFor('restart', ['/a'], new Set(['/a'])), ['/a']);
});
