import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { HttpAnswer } from './http-get.ts';
import { credentialsFor, parseOciUrl, prepareOci, wasmLayerType } from './oci-fetch.ts';

/** A registry as a table: URL → answer; every request is recorded with its Authorization. */
type Reply = Partial<HttpAnswer> | Error;
function fakeRegistry(table: Record<string, Reply | Reply[]>) {
  const asked: { url: string; authorization?: string; accept?: string; insecure?: boolean }[] = [];
  const get = async (url: string, options: { headers?: Record<string, string>; insecure?: boolean }): Promise<HttpAnswer> => {
    asked.push({ url, authorization: options.headers?.authorization, accept: options.headers?.accept, insecure: options.insecure });
    const entry = table[url];
    const reply = Array.isArray(entry) ? entry.shift() : entry;
    if (reply === undefined) return { status: 404, headers: {}, body: Buffer.alloc(0), url };
    if (reply instanceof Error) throw reply;
    return { status: 200, headers: {}, body: Buffer.alloc(0), url, ...reply };
  };
  return { asked, get };
}

const sha = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const module = Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
const other = Buffer.from('not the module');
const manifest = (layers: unknown[]) => Buffer.from(JSON.stringify({ schemaVersion: 2, layers }));
const base = 'https://r.test/v2/team/p';
const prepare = (registry: ReturnType<typeof fakeRegistry>, extra: Record<string, unknown> = {}) =>
  prepareOci('oci://r.test/team/p:v1', { insecure: false, get: registry.get, refusedRealm: () => undefined, ...extra });

describe('OCI manifests and layers from a hostile registry', () => {
  it('the Wasm layer is taken over the last one; without it, the last; layers with bad digests are skipped', async () => {
    const cases: [unknown[], Buffer][] = [
      [[{ digest: sha(module), mediaType: wasmLayerType }, { digest: sha(other) }], module],
      [[{ digest: sha(other) }, { digest: sha(module), mediaType: 'x' }], module],
      [[{ digest: sha(module) }, ...['sha256:short', 7, `${sha(other)}x`, `x${sha(other)}`, sha(other).toUpperCase()].map((digest) => ({ digest }))], module],
    ];
    for (const [layers, expected] of cases) {
      const body = manifest(layers);
      const registry = fakeRegistry({
        [`${base}/manifests/v1`]: { body },
        [`${base}/blobs/${sha(module)}`]: { body: module },
        [`${base}/blobs/${sha(other)}`]: { body: other },
      });
      const image = await prepare(registry);
      assert.equal(image.manifestDigest, sha(body).slice('sha256:'.length));
      assert.deepEqual(await image.module(), expected);
      assert.match(
        registry.asked[0]!.accept ?? '',
        /^application\/vnd\.oci\.image\.manifest\.v1\+json, application\/vnd\.docker\.distribution\.manifest\.v2\+json$/,
      );
    }
  });

  it('refuses a manifest that is not JSON, has no usable layer, or is not 200; a blob that is not 200 or not the named digest', async () => {
    const cases: [Record<string, Reply>, RegExp][] = [
      [{ [`${base}/manifests/v1`]: { body: Buffer.from('{"layers": [') } }, /^manifest of oci:\/\/r\.test\/team\/p:v1 is not JSON$/],
      [{ [`${base}/manifests/v1`]: { body: manifest([]) } }, /^manifest of oci:\/\/r\.test\/team\/p:v1 has no layer$/],
      [{ [`${base}/manifests/v1`]: { body: Buffer.from('{}') } }, /has no layer/],
      [{ [`${base}/manifests/v1`]: { body: Buffer.from('null') } }, /has no layer|null/],
      [{ [`${base}/manifests/v1`]: { status: 500, body: manifest([{ digest: sha(module) }]) } }, /^manifest oci:\/\/r\.test\/team\/p:v1: HTTP 500$/],
    ];
    for (const [table, message] of cases) await assert.rejects(prepare(fakeRegistry(table)), { message });
    const layers = manifest([{ digest: sha(module) }]);
    const failing = await prepare(fakeRegistry({ [`${base}/manifests/v1`]: { body: layers }, [`${base}/blobs/${sha(module)}`]: { status: 503 } }));
    await assert.rejects(failing.module(), { message: `blob ${sha(module)} of oci://r.test/team/p:v1: HTTP 503` });
    const swapped = await prepare(fakeRegistry({ [`${base}/manifests/v1`]: { body: layers }, [`${base}/blobs/${sha(module)}`]: { body: other } }));
    await assert.rejects(swapped.module(), { message: `blob of oci://r.test/team/p:v1 has digest ${sha(other)}, not the manifest's ${sha(module)}` });
  });

  it('asks again over plain HTTP only when TLS was answered in HTTP', async () => {
    const body = manifest([{ digest: sha(module) }]);
    const plain = fakeRegistry({
      [`${base}/manifests/v1`]: new Error('wrong version number'),
      'http://r.test/v2/team/p/manifests/v1': { body },
      [`http://r.test/v2/team/p/blobs/${sha(module)}`]: { body: module },
    });
    assert.deepEqual(await (await prepare(plain, { insecure: true })).module(), module);
    assert.deepEqual(plain.asked.map((ask) => [ask.url.slice(0, 12), ask.insecure]), [['https://r.te', true], ['http://r.tes', true], ['http://r.tes', true]]);
    assert.deepEqual(plain.asked.map((ask) => ask.accept?.split(', ').length), [2, 2, undefined], 'the manifest asked over HTTP accepts the same types');
    const refused = fakeRegistry({ [`${base}/manifests/v1`]: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    await assert.rejects(prepare(refused), /ECONNREFUSED/);
    assert.equal(refused.asked.length, 1);
  });
});

describe('OCI registry challenges', () => {
  const body = manifest([{ digest: sha(module) }]);
  const secret = JSON.stringify({ auths: { 'r.test': { username: 'u', password: 'p' } } });
  const basicUp = `Basic ${Buffer.from('u:p').toString('base64')}`;

  it('a basic challenge is answered with the pull secret, kept for the blob; without credentials the 401 stands', async () => {
    const registry = fakeRegistry({
      [`${base}/manifests/v1`]: [{ status: 401, headers: { 'www-authenticate': 'BASIC realm="r"' } }, { body }],
      [`${base}/blobs/${sha(module)}`]: { body: module },
    });
    assert.deepEqual(await (await prepare(registry, { pullSecret: secret })).module(), module);
    assert.deepEqual(registry.asked.map((ask) => ask.authorization), [undefined, basicUp, basicUp]);
    const bare = fakeRegistry({ [`${base}/manifests/v1`]: { status: 401, headers: { 'www-authenticate': 'Basic realm="r"' } } });
    await assert.rejects(prepare(bare), { message: /HTTP 401$/ });
    assert.equal(bare.asked.length, 1);
  });

  it('an unknown challenge, or none, leaves the 401', async () => {
    for (const headers of [{ 'www-authenticate': 'Negotiate' }, {}, { 'www-authenticate': 'Digest realm="bearer"' }]) {
      const registry = fakeRegistry({ [`${base}/manifests/v1`]: { status: 401, headers } });
      await assert.rejects(prepare(registry, { pullSecret: secret }), { message: /HTTP 401$/ });
      assert.equal(registry.asked.length, 1);
    }
  });

  it('a bearer challenge: the token from the realm with service and scope, the pull secret as basic auth; token or access_token', async () => {
    for (const [answer, scope] of [[{ token: 't1' }, 'repository:team/p:pull'], [{ access_token: 't1' }, 'custom']] as const) {
      const challenge = `bearer realm="https://auth.test/token",service="reg"${scope === 'custom' ? ',scope="custom"' : ''}`;
      const token = `https://auth.test/token?service=reg&scope=${encodeURIComponent(scope)}`;
      const registry = fakeRegistry({
        [`${base}/manifests/v1`]: [{ status: 401, headers: { 'www-authenticate': challenge } }, { body }],
        [token]: { body: Buffer.from(JSON.stringify(answer)) },
        [`${base}/blobs/${sha(module)}`]: { body: module },
      });
      assert.deepEqual(await (await prepare(registry, { pullSecret: secret })).module(), module);
      assert.deepEqual(registry.asked.map((ask) => ask.authorization), [undefined, basicUp, 'Bearer t1', 'Bearer t1']);
    }
    const anonymous = fakeRegistry({
      [`${base}/manifests/v1`]: [{ status: 401, headers: { 'www-authenticate': 'Bearer realm="https://auth.test/t"' } }, { body }],
      'https://auth.test/t?scope=repository%3Ateam%2Fp%3Apull': { body: Buffer.from('{"token":"a"}') },
    });
    await prepare(anonymous);
    assert.deepEqual(anonymous.asked.map((ask) => ask.authorization), [undefined, undefined, 'Bearer a']);
    const basicRealm = fakeRegistry({
      [`${base}/manifests/v1`]: [{ status: 401, headers: { 'www-authenticate': 'Bearer realm="https://auth.test/basic"' } }, { body }],
      'https://auth.test/basic?scope=repository%3Ateam%2Fp%3Apull': { body: Buffer.from('{"token":"b"}') },
    });
    await prepare(basicRealm);
    assert.deepEqual(basicRealm.asked.map((ask) => ask.authorization), [undefined, undefined, 'Bearer b'], 'the scheme is the first word only');
  });

  it('a registry that challenges nothing is pulled from without reading the pull secret', async () => {
    const registry = fakeRegistry({ [`${base}/manifests/v1`]: { body }, [`${base}/blobs/${sha(module)}`]: { body: module } });
    assert.deepEqual(await (await prepare(registry, { pullSecret: 'not json' })).module(), module);
  });

  it('a token server that refuses, answers no token, or names a refused realm fails the pull', async () => {
    const challenge = (realm: string) => ({ [`${base}/manifests/v1`]: { status: 401, headers: { 'www-authenticate': `Bearer realm="${realm}"` } } });
    const t = 'https://auth.test/t?scope=repository%3Ateam%2Fp%3Apull';
    await assert.rejects(prepare(fakeRegistry({ ...challenge('https://auth.test/t'), [t]: { status: 403 } })), {
      message: 'token from https://auth.test/t: HTTP 403',
    });
    await assert.rejects(prepare(fakeRegistry({ ...challenge('https://auth.test/t'), [t]: { body: Buffer.from('{"token":""}') } })), {
      message: 'token from https://auth.test/t: the answer has no token',
    });
    await assert.rejects(prepare(fakeRegistry(challenge('https://127.0.0.1/t')), { refusedRealm: undefined }), {
      message: 'registry r.test: token realm 127.0.0.1 is a private, loopback or link-local address',
    });
    await assert.rejects(
      prepare(fakeRegistry({ [`${base}/manifests/v1`]: { status: 401, headers: { 'www-authenticate': 'Bearer service="x"' } } }), { refusedRealm: undefined }),
      /token realm "" is not a URL/,
    );
  });
});

describe('OCI references and pull secrets', () => {
  it('parses references; refuses a reference without a repository or with an invalid name', () => {
    assert.deepEqual(parseOciUrl('r.test/a/b@sha256:ab'), { registry: 'r.test', repository: 'a/b', reference: 'sha256:ab' });
    assert.deepEqual(parseOciUrl('oci://r.test:5000/a.b-c_d/e'), { registry: 'r.test:5000', repository: 'a.b-c_d/e', reference: 'latest' });
    for (const bad of ['oci:///a', 'oci://r.test/', 'oci://r.test/A', 'oci://r.test/a//b', 'oci://r.test/-a', 'oci://r.test/a-:v1', 'oci://r.test/../etc']) {
      assert.throws(() => parseOciUrl(bad), /registry and a repository|is not a valid OCI name/, bad);
    }
    assert.throws(() => parseOciUrl('oci://r.test/a b:v1'), { message: 'oci://r.test/a b:v1: repository "a b" is not a valid OCI name' });
  });

  it('reads auth, or username and password, for the registry alone; a bare map of hosts too', () => {
    const auth = Buffer.from('u:p:w').toString('base64');
    const cases: [string | undefined, string, string | undefined][] = [
      [undefined, 'r.test', undefined],
      ['', 'r.test', undefined],
      [JSON.stringify({ auths: { 'r.test': { auth } } }), 'r.test', 'u:p:w'],
      [JSON.stringify({ auths: { 'http://r.test/v1/': { username: 'u' } } }), 'r.test', 'u:'],
      [JSON.stringify({ auths: { 'r.test': { password: 'p' } } }), 'r.test', undefined],
      [JSON.stringify({ auths: { 'other.test': { auth } } }), 'r.test', undefined],
      [JSON.stringify({ 'r.test': { username: 'u', password: 'p' } }), 'r.test', 'u:p'],
      [JSON.stringify({ auths: { 'r.test.evil': { auth } } }), 'r.test', undefined],
      ['null', 'r.test', undefined],
    ];
    for (const [secret, registry, expected] of cases) assert.equal(credentialsFor(secret, registry), expected, String(secret));
  });
});
