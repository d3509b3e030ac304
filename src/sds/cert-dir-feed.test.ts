import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { silentLogger } from '../shared/log.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { changedPaths, feedCertDir, restartNeededFor, storeCertDir, type CertRotation } from './cert-dir-feed.ts';
import { SecretStore } from './secret-store.ts';

/** Two self-signed certificates with keys, made once (openssl; no clock involved). */
const pems = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'feed-test-'));
  const make = (name: string) => {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        join(dir, `${name}.key`),
        '-out',
        join(dir, `${name}.crt`),
        '-subj',
        `/CN=${name}`,
        '-days',
        '1',
      ],
      { stdio: 'ignore' },
    );
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
  const onFiles = feedCertDir({
    store,
    certDir: '/certs',
    rotation,
    coveredFiles: () => new Set(covered),
    restart: (hash) => restarts.push(hash),
    logger: silentLogger,
  });
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

test('feedCertDir: the set\'s hash goes to the restart; an unchanged set restarts nothing and says so', () => {
  const lines: { msg: string; files?: string[] }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const store = new SecretStore();
  const restarts: string[] = [];
  const onFiles = feedCertDir({ store, certDir: '/certs', rotation: 'restart', coveredFiles: () => new Set(), restart: (hash) => restarts.push(hash), logger });
  onFiles('h1', files(pems.a));
  onFiles('h2', files(pems.a));
  assert.deepEqual(restarts, ['h1']);
  assert.deepEqual(lines.map((line) => [line.msg, line.files]), [['certificate change delivered over SDS; no restart', []]]);
});

test('feedCertDir: with a CA feeding default and ROOTCA, the dir\'s files neither replace nor remove them', () => {
  const store = new SecretStore();
  const onFiles = feedCertDir({
    store,
    certDir: '/certs',
    rotation: 'auto',
    coveredFiles: () => new Set(),
    restart: () => undefined,
    logger: silentLogger,
    storesWorkload: false,
  });
  onFiles('h1', files(pems.a));
  assert.equal(store.get('default'), undefined);
  assert.equal(store.problem('default'), undefined);
  assert.equal(store.get('ROOTCA'), undefined);
});

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

test('changedPaths: a file that appears or disappears is a change; the same bytes are not', () => {
  const before: FileRead[] = [{ path: '/a', content: Buffer.from('x') }, { path: '/b' }];
  assert.deepEqual(changedPaths(before, [{ path: '/a', content: Buffer.from('x') }, { path: '/b', content: Buffer.from('y') }]), ['/b']);
  assert.deepEqual(changedPaths(before, [{ path: '/a' }, { path: '/b' }]), ['/a']);
  assert.deepEqual(changedPaths(before, before), []);
  assert.deepEqual(changedPaths([], [{ path: '/new' }]), [], 'absent before and after');
  assert.deepEqual(changedPaths([], [{ path: '/new', content: Buffer.alloc(0) }]), ['/new']);
});

test("feedCertDir: the agent's own OUTPUT_CERTS write into the dir restarts nothing; another file's change still does", () => {
  const restarts: string[] = [];
  const ownFiles = new Set(['/certs/cert-chain.pem', '/certs/key.pem', '/certs/root-cert.pem']);
  const common = { store: new SecretStore(), certDir: '/certs', coveredFiles: () => new Set<string>(), logger: silentLogger, storesWorkload: false };
  const onFiles = feedCertDir({ ...common, rotation: 'auto', restart: (hash) => restarts.push(hash), ownFiles });
  onFiles('h0', files(pems.a));
  onFiles('h1', files(pems.b));
  assert.deepEqual(restarts, ['h0'], 'a VM whose PROV_CERT and OUTPUT_CERTS are its --certDir: no epoch 1 after the first certificate');
  const restartsOthers: string[] = [];
  const partial = feedCertDir({ ...common, rotation: 'auto', restart: (hash) => restartsOthers.push(hash), ownFiles: new Set(['/certs/cert-chain.pem']) });
  partial('h0', files(pems.a));
  partial('h1', files(pems.b));
  assert.deepEqual(restartsOthers, ['h0', 'h1'], 'key.pem is not the agent\'s: its change restarts');
});
