import assert from 'node:assert/strict';
import { test } from 'node:test';
import { caSettingsFromEnv } from './ca-settings.ts';

const base = { CA_ADDR: 'istiod.istio-system.svc:15012', POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' };
const settings = (env: NodeJS.ProcessEnv, extra: { tokenFile?: string; certFilesMounted?: boolean } = {}) =>
  caSettingsFromEnv({ env, tokenFile: extra.tokenFile, certFilesMounted: extra.certFilesMounted ?? false });

test('when the agent asks a CA', () => {
  assert.equal(settings({}), undefined, 'no CA_ADDR: no CA');
  assert.equal(settings(base, { certFilesMounted: true }), undefined, 'mounted files win');
  assert.equal(settings({ ...base, FILE_MOUNTED_CERTS: 'true' }), undefined);
  assert.ok(settings(base));
});

test('Istio\'s defaults and names', () => {
  assert.deepEqual(settings(base), {
    address: 'istiod.istio-system.svc:15012', rootsPath: '/var/run/secrets/istio/root-cert.pem', serverName: 'istiod.istio-system.svc',
    tokenPath: '/var/run/secrets/tokens/istio-token', identity: 'spiffe://cluster.local/ns/shop/sa/cart', trustDomain: 'cluster.local',
    keyAlgorithm: 'ECDSA', ttlSeconds: 86_400, graceRatio: 0.5, jitterRatio: 0.01, outputDir: undefined, clusterId: undefined,
  });
  const custom = settings({ ...base, TRUST_DOMAIN: 'corp.example', ISTIOD_SAN: 'istiod.corp', CA_ROOT_CA: '/r.pem', SECRET_TTL: '12h', SECRET_GRACE_PERIOD_RATIO: '0.25', WORKLOAD_KEY_ALGORITHM: 'RSA', OUTPUT_CERTS: '/out', ISTIO_META_CLUSTER_ID: 'c1' }, { tokenFile: '/t' })!;
  assert.equal(custom.identity, 'spiffe://corp.example/ns/shop/sa/cart');
  assert.deepEqual([custom.serverName, custom.rootsPath, custom.tokenPath, custom.ttlSeconds, custom.graceRatio, custom.keyAlgorithm, custom.outputDir, custom.clusterId], ['istiod.corp', '/r.pem', '/t', 43_200, 0.25, 'RSA', '/out', 'c1']);
});

test('wrong values are bad input naming the variable', () => {
  const cases: [NodeJS.ProcessEnv, RegExp][] = [
    [{ ...base, CA_ADDR: 'istiod' }, /^env CA_ADDR: /],
    [{ ...base, SERVICE_ACCOUNT: '' }, /^env SERVICE_ACCOUNT: must be set/],
    [{ ...base, POD_NAMESPACE: undefined }, /^env POD_NAMESPACE: must be set/],
    [{ ...base, SERVICE_ACCOUNT: 'a/b' }, /^env SERVICE_ACCOUNT: "a\/b" contains "\/"/],
    [{ ...base, SECRET_TTL: '10s' }, /^env SECRET_TTL: "10s" is not a Go duration of at least 1m/],
    [{ ...base, SECRET_GRACE_PERIOD_RATIO: '1.5' }, /^env SECRET_GRACE_PERIOD_RATIO: /],
    [{ ...base, SECRET_GRACE_PERIOD_RATIO_JITTER: '-0.1' }, /^env SECRET_GRACE_PERIOD_RATIO_JITTER: /],
    [{ ...base, WORKLOAD_KEY_ALGORITHM: 'DSA' }, /^env WORKLOAD_KEY_ALGORITHM: "DSA" is not ECDSA or RSA/],
    [{ ...base, ECC_SIGNATURE_ALGORITHM: 'ED25519' }, /^env ECC_SIGNATURE_ALGORITHM: "ED25519" is not ECDSA/],
  ];
  for (const [env, message] of cases) assert.throws(() => settings(env), (error: Error & { exitCode?: number }) => message.test(error.message) && error.exitCode === 2, JSON.stringify(env));
});

test('the other CA variables are read only when the agent asks a CA', () => {
  assert.equal(settings({ SECRET_TTL: '10s', POD_NAMESPACE: 'a/b' }), undefined, 'no CA_ADDR');
  assert.equal(settings({ ...base, FILE_MOUNTED_CERTS: 'TRUE', WORKLOAD_KEY_ALGORITHM: 'DSA' }), undefined, 'FILE_MOUNTED_CERTS');
  assert.equal(settings({ ...base, SECRET_TTL: '10s' }, { certFilesMounted: true }), undefined, 'files in --certDir');
});

test('empty is unset, and the cluster ID has two names', () => {
  const empty = settings({ ...base, TRUST_DOMAIN: '', WORKLOAD_KEY_ALGORITHM: '', SECRET_TTL: '', CA_ROOT_CA: '', ISTIOD_SAN: '', ECC_SIGNATURE_ALGORITHM: '', FILE_MOUNTED_CERTS: '' })!;
  assert.deepEqual([empty.trustDomain, empty.keyAlgorithm, empty.ttlSeconds, empty.rootsPath, empty.serverName], ['cluster.local', 'ECDSA', 86_400, '/var/run/secrets/istio/root-cert.pem', 'istiod.istio-system.svc']);
  assert.equal(settings({ ...base, ECC_SIGNATURE_ALGORITHM: 'ECDSA' })!.keyAlgorithm, 'ECDSA');
  assert.equal(settings({ ...base, CLUSTER_ID: 'c2' })!.clusterId, 'c2');
  assert.equal(settings({ ...base, CLUSTER_ID: 'c2', ISTIO_META_CLUSTER_ID: 'c1' })!.clusterId, 'c1');
});
