import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { test } from 'node:test';
import pino from 'pino';
import { recipeSetup } from '../../test/support/envoy-recipe.ts';
import { files, pems } from '../../test/support/self-signed.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import type { IssuedCertificate } from '../ca/workload-certificates.ts';
import { SecretStore } from '../sds/secret-store.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import { silentLogger } from '../shared/log.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { startEnvoyLoop, type XdsChoice } from './envoy-loop.ts';
import { changedPaths, feedCertDir, restartNeededFor, Rotation, type CertRotation } from './rotation.ts';

function feed(rotation: CertRotation, covered: string[]) {
  const store = new SecretStore();
  const restarts: string[] = [];
  const onFiles = feedCertDir({
    store,
    certDir: '/certs',
    rotation,
    coveredFiles: () => new Set(covered),
    requestEpoch: (hash) => restarts.push(hash),
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
  const onFiles = feedCertDir({ store, certDir: '/certs', rotation: 'restart', coveredFiles: () => new Set(), requestEpoch: (hash) => restarts.push(hash), logger });
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
    requestEpoch: () => undefined,
    logger: silentLogger,
    storesWorkload: false,
  });
  onFiles('h1', files(pems.a));
  assert.equal(store.get('default'), undefined);
  assert.equal(store.problem('default'), undefined);
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
  const onFiles = feedCertDir({ ...common, rotation: 'auto', requestEpoch: (hash) => restarts.push(hash), ownFiles });
  onFiles('h0', files(pems.a));
  onFiles('h1', files(pems.b));
  assert.deepEqual(restarts, ['h0'], 'a VM whose PROV_CERT and OUTPUT_CERTS are its --certDir: no epoch 1 after the first certificate');
  const restartsOthers: string[] = [];
  const partial = feedCertDir({ ...common, rotation: 'auto', requestEpoch: (hash) => restartsOthers.push(hash), ownFiles: new Set(['/certs/cert-chain.pem']) });
  partial('h0', files(pems.a));
  partial('h1', files(pems.b));
  assert.deepEqual(restartsOthers, ['h0', 'h1'], 'key.pem is not the agent\'s: its change restarts');
});

/** The owner between a fake SDS side (a real store, the covered files the test names) and the real loop over a FakeProxy, on a fake clock. */
async function owner(options: { served: boolean; caInUse?: boolean; outputDir?: 'certDir' }) {
  const { ctx, dir, logs } = await recipeSetup();
  const { chain, key, root } = certFilesIn(ctx.config.certDir);
  const store = options.served ? new SecretStore() : undefined;
  const pushed: string[] = [];
  store?.onChange((name) => pushed.push(name));
  const covered = new Set([chain, key]);
  const proxy = new FakeProxy();
  const choice: XdsChoice = { mode: 'delta', configSuffix: '' };
  const loop = startEnvoyLoop(ctx, { proxy, xds: { canConfigure: () => true, onGateChange: () => () => undefined }, choice });
  const outputDir = options.outputDir && ctx.config.certDir;
  const rotation = new Rotation(ctx, { sds: { store, coveredFiles: () => covered }, caInUse: options.caInUse ?? false, outputDir });
  const set = (pair: { cert: Buffer; key: Buffer }, rootPem: Buffer): FileRead[] => [
    { path: chain, content: pair.cert }, { path: key, content: pair.key }, { path: root, content: rootPem },
  ];
  const close = async () => (await loop[Symbol.asyncDispose](), await rm(dir, { recursive: true, force: true }));
  return { rotation, loop, proxy, choice, store, pushed, set, close, logs, feed: rotation.filesFeed(loop) };
}

const settled = () => new Promise(setImmediate);
const configs = (proxy: FakeProxy) => proxy.starts.map((start) => `${start.epoch} ${start.config}`);

test('the rotation owner: files SDS delivers are pushed without an epoch; a file Envoy reads itself is a new epoch, under the flavour\'s mark', async () => {
  const run = await owner({ served: true });
  try {
    run.feed('h0', run.set(pems.a, pems.a.cert));
    await settled();
    assert.deepEqual(configs(run.proxy), ['0 h0'], 'the first set starts Envoy');
    assert.deepEqual(run.pushed, ['default', 'ROOTCA']);
    run.proxy.live(0);
    run.pushed.length = 0;
    run.feed('h1', run.set(pems.b, pems.a.cert));
    await settled();
    assert.deepEqual([configs(run.proxy), run.pushed], [['0 h0'], ['default']], 'chain and key are on an SDS stream: pushed, no epoch');
    const line = run.logs.lines.find((entry) => entry.msg === 'certificate change delivered over SDS; no restart');
    assert.deepEqual([line?.component, line?.files], ['sds', [run.set(pems.b, pems.a.cert)[0]!.path, run.set(pems.b, pems.a.cert)[1]!.path]]);
    run.choice.configSuffix = '+sotw';
    run.feed('h2', run.set(pems.b, pems.b.cert));
    await settled();
    assert.deepEqual(configs(run.proxy), ['0 h0', '1 h2+sotw'], 'the root is read from disk: a new epoch, the config marked as the loop runs it');
  } finally {
    await run.close();
  }
});

test('the rotation owner: a CA certificate is pushed over SDS, never an epoch; the dir\'s files leave it alone', async () => {
  const run = await owner({ served: true, caInUse: true, outputDir: 'certDir' });
  try {
    const chain = [pems.b.cert.toString(), pems.a.cert.toString()];
    const issued = { chain, key: pems.b.key.toString(), root: pems.a.cert.toString() } as IssuedCertificate;
    run.rotation.caFeed()!(issued);
    await settled();
    assert.deepEqual([configs(run.proxy), run.pushed], [[], ['default', 'ROOTCA']]);
    assert.deepEqual(run.store!.get('default')!.material, { kind: 'tls-certificate', chain: Buffer.from(chain.join('')), key: pems.b.key });
    assert.deepEqual(run.store!.get('ROOTCA')!.material, { kind: 'validation-context', trustedCa: pems.a.cert });
    run.feed('h0', run.set(pems.a, pems.a.cert));
    await settled();
    assert.deepEqual([configs(run.proxy), run.pushed.length], [['0 h0'], 2], "the first set still starts Envoy; the CA's default stays");
    run.proxy.live(0);
    run.feed('h1', run.set(pems.b, pems.b.cert));
    await settled();
    assert.deepEqual(configs(run.proxy), ['0 h0'], 'OUTPUT_CERTS is the dir: the CA\'s own write there is no new epoch');
    const line = run.logs.lines.find((entry) => entry.msg === "certificate dir changed by the agent's own OUTPUT_CERTS write; no restart");
    assert.equal((line?.files as string[] | undefined)?.length, 3, 'said as such, naming the files');
  } finally {
    await run.close();
  }
});

test('the rotation owner: with another process serving SDS, every change is a new epoch and the CA feeds nothing', async () => {
  const run = await owner({ served: false });
  try {
    assert.equal(run.rotation.caFeed(), undefined);
    run.feed('h0', run.set(pems.a, pems.a.cert));
    await settled();
    run.proxy.live(0);
    run.feed('h1', run.set(pems.b, pems.a.cert));
    await settled();
    assert.deepEqual(configs(run.proxy), ['0 h0', '1 h1'], 'chain and key "covered" by no stream of ours: restart');
  } finally {
    await run.close();
  }
});

test('the rotation owner: watch() reads the dir at once (its first set starts epoch 0); a missing dir is a warning only without a CA', async () => {
  for (const caInUse of [false, true]) {
    const run = await owner({ served: true, caInUse });
    try {
      const watch = await run.rotation.watch(run.loop);
      await settled();
      assert.equal(configs(run.proxy).length, 1, 'no files is a set too: Envoy starts without certificates');
      await watch[Symbol.asyncDispose]();
      const warned = run.logs.lines.filter((line) => line.msg.startsWith('certificate dir does not exist')).map((line) => line.component);
      assert.deepEqual(warned, caInUse ? [] : ['certs'], `caInUse ${caInUse}`);
    } finally {
      await run.close();
    }
  }
});
