import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startOciRegistry, type OciRegistry } from '../../test/peers/oci-registry/registry.ts';
import { makeCa } from '../../test/support/certs.ts';
import { systemClock } from '../shared/clock.ts';
import { moduleFetcher } from './fetch-module.ts';
import { credentialsFor, parseOciUrl } from './oci-fetch.ts';
import { parseCidrs } from '../shared/cidr.ts';

const module = Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 42]);
const secret = JSON.stringify({ auths: {} });

describe('OCI pulls from a registry on loopback', () => {
  let open: OciRegistry;
  let locked: OciRegistry;
  before(async () => {
    open = await startOciRegistry({ images: [{ repository: 'team/plugin', tag: 'v1', module }] });
    locked = await startOciRegistry({ images: [{ repository: 'plugin', tag: 'v1', module }], auth: { user: 'puller', password: 's3cret' } });
  });
  after(async () => {
    await open.close();
    await locked.close();
  });

  const fetcher = (options: { relaxRealm?: boolean; blocked?: string; insecure?: string } = {}) =>
    moduleFetcher({
      requestTimeoutMs: 2000,
      maxRetries: 1,
      insecureRegistries: new Set(options.insecure ? [options.insecure] : []),
      clock: systemClock,
      maxBytes: 1 << 20,
      blocked: options.blocked ? parseCidrs(options.blocked) : undefined,
      refusedRealm: options.relaxRealm ? () => undefined : undefined,
    });
  const request = (url: string, pullSecret?: string) => ({
    url,
    checksum: '',
    resourceName: 'r',
    resourceVersion: '',
    pullPolicy: 'unspecified' as const,
    timeoutMs: 5000,
    pullSecret,
  });

  it('reads the manifest over plain HTTP when HTTPS is answered in HTTP, reports its digest, then the layer', async () => {
    const fetched = await fetcher()(request(`oci://${open.host}/team/plugin:v1`));
    assert.equal(fetched.digest, open.manifestDigest('team/plugin', 'v1'));
    assert.ok(!open.requests.some((line) => line.includes('/blobs/')), 'the blob waits until the digest is judged');
    assert.deepEqual(await fetched.module(), module);
    assert.ok(open.requests.some((line) => line === `GET /v2/team/plugin/blobs/sha256:${createHash('sha256').update(module).digest('hex')}`));
  });

  it('gets a bearer token with the pull secret\'s basic credentials', async () => {
    const pullSecret = JSON.stringify({ auths: { [locked.host]: { auth: Buffer.from('puller:s3cret').toString('base64') } } });
    const fetched = await fetcher({ relaxRealm: true })(request(`oci://${locked.host}/plugin:v1`, pullSecret));
    assert.deepEqual(await fetched.module(), module);
    assert.ok(locked.requests.some((line) => line.startsWith('GET /token?')));
  });

  it('without credentials the registry\'s 401 stays a failure', async () => {
    await assert.rejects(fetcher({ relaxRealm: true })(request(`oci://${locked.host}/plugin:v1`, secret)), /HTTP 401/);
  });

  it('refuses a token realm on loopback, as Istio does', async () => {
    await assert.rejects(fetcher()(request(`oci://${locked.host}/plugin:v1`)), /private, loopback or link-local/);
  });

  it('fetches over http by name, through the checked lookup', async () => {
    const blob = `http://localhost:${open.host.split(':')[1]}/v2/team/plugin/blobs/sha256:${createHash('sha256').update(module).digest('hex')}`;
    const fetched = await fetcher()(request(blob));
    assert.deepEqual(await fetched.module(), module);
    assert.equal(fetched.digest, createHash('sha256').update(module).digest('hex'));
  });

  it('refuses ranges of BLOCKED_CIDRS_IN_WASM_FETCH, by address and by name', async () => {
    await assert.rejects(fetcher({ blocked: '127.0.0.0/8' })(request(`oci://${open.host}/team/plugin:v1`)), /BLOCKED_CIDRS_IN_WASM_FETCH/);
    await assert.rejects(fetcher({ blocked: '127.0.0.0/8' })(request(`http://localhost:${open.host.split(':')[1]}/v2/`)), /BLOCKED_CIDRS_IN_WASM_FETCH/);
  });

  it('an HTTPS registry with an unknown CA: refused, unless WASM_INSECURE_REGISTRIES names it', async () => {
    const ca = await makeCa();
    const pair = await ca.issue('registry');
    const secure = await startOciRegistry({ images: [{ repository: 'plugin', tag: 'v1', module }], tls: pair });
    try {
      await assert.rejects(fetcher()(request(`oci://${secure.host}/plugin:v1`)), /certificate/i);
      assert.equal(secure.requests.length, 0, 'no plain-HTTP fallback for a certificate error');
      const fetched = await fetcher({ insecure: secure.host })(request(`oci://${secure.host}/plugin:v1`));
      assert.deepEqual(await fetched.module(), module);
    } finally {
      await secure.close();
      await ca.close();
    }
  });

  it('a layer past ISTIO_WASM_MAX_BINARY_SIZE_BYTES, or a manifest past it, is refused (whatever size the manifest claims)', async () => {
    const big = Buffer.concat([module, Buffer.alloc(4096)]);
    const registry = await startOciRegistry({ images: [{ repository: 'big', tag: 'v1', module: big }] });
    try {
      const small = moduleFetcher({ requestTimeoutMs: 2000, maxRetries: 1, insecureRegistries: new Set(), clock: systemClock, maxBytes: 2048 });
      const fetched = await small(request(`oci://${registry.host}/big:v1`));
      await assert.rejects(fetched.module(), /body larger than 2048 bytes/);
      const tiny = moduleFetcher({ requestTimeoutMs: 2000, maxRetries: 1, insecureRegistries: new Set(), clock: systemClock, maxBytes: 64 });
      await assert.rejects(tiny(request(`oci://${registry.host}/big:v1`)), /manifests\/v1: body larger than 64 bytes/);
    } finally {
      await registry.close();
    }
  });

  it('refuses a registry on a link-local address before connecting', async () => {
    await assert.rejects(fetcher()(request('oci://169.254.169.254/plugin:v1')), /link-local/);
  });

  it('parses references and docker config secrets', () => {
    assert.deepEqual(parseOciUrl('oci://r.example:5000/a/b:v2'), { registry: 'r.example:5000', repository: 'a/b', reference: 'v2' });
    assert.deepEqual(parseOciUrl('oci://r.example/a'), { registry: 'r.example', repository: 'a', reference: 'latest' });
    assert.equal(parseOciUrl(`oci://r.example/a@sha256:${'f'.repeat(64)}`).reference, `sha256:${'f'.repeat(64)}`);
    assert.throws(() => parseOciUrl('oci://r.example'), /registry and a repository/);
    assert.equal(credentialsFor(JSON.stringify({ auths: { 'https://r.example': { username: 'u', password: 'p' } } }), 'r.example'), 'u:p');
    assert.equal(credentialsFor(JSON.stringify({ auths: {} }), 'r.example'), undefined);
    assert.throws(() => credentialsFor('not json', 'r.example'), /not JSON/);
  });
});
