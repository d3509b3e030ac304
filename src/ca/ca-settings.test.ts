import assert from 'node:assert/strict';
import { test } from 'node:test';
import { caSettingsFromEnv } from './ca-settings.ts';

const base = { CA_ADDR: 'istiod.istio-system.svc:15012', POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' };
const discoveryAddress = 'istiod.istio-system.svc:15012';
const settings = (env: NodeJS.ProcessEnv, extra: { tokenFile?: string; certFilesMounted?: boolean; discoveryAddress?: string } = {}) =>
  caSettingsFromEnv({
    env,
    tokenFile: extra.tokenFile,
    certFilesMounted: extra.certFilesMounted ?? false,
    discoveryAddress: 'discoveryAddress' in extra ? extra.discoveryAddress : discoveryAddress,
  });

test('when the agent asks a CA', () => {
  assert.equal(settings({}), undefined, 'no CA_ADDR and no identity: no CA');
  assert.equal(settings({ POD_NAMESPACE: 'shop' }), undefined, 'no CA_ADDR and half an identity: no CA');
  assert.equal(settings({ POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' }, { discoveryAddress: undefined }), undefined);
  assert.equal(settings({ POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' })?.address, discoveryAddress, 'CA_ADDR defaults to the discovery address, as Istio');
  assert.equal(settings(base, { certFilesMounted: true }), undefined, 'mounted files win');
  assert.equal(settings({ ...base, FILE_MOUNTED_CERTS: 'true' }), undefined);
  assert.ok(settings(base));
});

test('Istio\'s defaults and names', () => {
  assert.deepEqual(settings(base), {
    address: 'istiod.istio-system.svc:15012', rootsPath: './var/run/secrets/istio/root-cert.pem', serverName: 'istiod.istio-system.svc',
    tokenPath: './var/run/secrets/tokens/istio-token', identity: 'spiffe://cluster.local/ns/shop/sa/cart', trustDomain: 'cluster.local',
    key: { algorithm: 'RSA', rsaBits: 2048 }, pkcs8Key: false, certSigner: undefined, headers: {}, plaintext: false, rootsExplicit: false,
    ttlSeconds: 86_400, graceRatio: 0.5, jitterRatio: 0.01, provCert: undefined, outputDir: undefined, clusterId: undefined,
  });
  const custom = settings(
    {
      ...base,
      CA_ADDR: 'istiod.corp:15012',
      TRUST_DOMAIN: 'corp.example',
      ISTIOD_SAN: 'istiod.corp',
      CA_ROOT_CA: '/r.pem',
      SECRET_TTL: '12h',
      SECRET_GRACE_PERIOD_RATIO: '0.25',
      ECC_SIGNATURE_ALGORITHM: 'ECDSA',
      OUTPUT_CERTS: '/out',
      ISTIO_META_CLUSTER_ID: 'c1',
    },
    { tokenFile: '/t' },
  )!;
  assert.equal(custom.identity, 'spiffe://corp.example/ns/shop/sa/cart');
  assert.deepEqual(
    [
      custom.serverName,
      custom.rootsPath,
      custom.rootsExplicit,
      custom.tokenPath,
      custom.ttlSeconds,
      custom.graceRatio,
      custom.key,
      custom.outputDir,
      custom.clusterId,
    ],
    ['istiod.corp', '/r.pem', true, '/t', 43_200, 0.25, { algorithm: 'ECDSA', curve: 'P256' }, '/out', 'c1'],
  );
});

test('the name the CA\'s certificate must carry, as Istio: ISTIOD_SAN only for a CA that is the discovery server', () => {
  const cases: { name: string; env: NodeJS.ProcessEnv; want: string }[] = [
    { name: 'CA_ADDR unset, ISTIOD_SAN set', env: { POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart', ISTIOD_SAN: 'istiod.corp' }, want: 'istiod.corp' },
    {
      name: "CA_ADDR unset, no ISTIOD_SAN: the discovery address's host",
      env: { POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' },
      want: 'istiod.istio-system.svc',
    },
    {
      name: 'CA_ADDR of its own: its host, whatever ISTIOD_SAN says',
      env: { ...base, CA_ADDR: 'cert-manager-istio-csr.cert-manager.svc:443', ISTIOD_SAN: 'istiod.istio-system.svc' },
      want: 'cert-manager-istio-csr.cert-manager.svc',
    },
    { name: 'CA_ADDR by IP: the IP', env: { ...base, CA_ADDR: '10.0.0.7:15012', ISTIOD_SAN: 'istiod.istio-system.svc' }, want: '10.0.0.7' },
  ];
  for (const { name, env, want } of cases) assert.equal(settings(env)?.serverName, want, name);
});

test('the workload key as Istio picks it: RSA-2048 unless ECC_SIGNATURE_ALGORITHM=ECDSA', () => {
  const cases: [NodeJS.ProcessEnv, object][] = [
    [{}, { algorithm: 'RSA', rsaBits: 2048 }],
    [{ WORKLOAD_RSA_KEY_SIZE: '4096' }, { algorithm: 'RSA', rsaBits: 4096 }],
    [{ ECC_SIGNATURE_ALGORITHM: 'ECDSA' }, { algorithm: 'ECDSA', curve: 'P256' }],
    [{ ECC_SIGNATURE_ALGORITHM: 'ECDSA', ECC_CURVE: 'P384' }, { algorithm: 'ECDSA', curve: 'P384' }],
    [{ ECC_CURVE: 'P384' }, { algorithm: 'RSA', rsaBits: 2048 }],
    [{ WORKLOAD_KEY_ALGORITHM: 'ECDSA' }, { algorithm: 'ECDSA', curve: 'P256' }],
    [{ ECC_SIGNATURE_ALGORITHM: 'ECDSA', WORKLOAD_KEY_ALGORITHM: 'RSA' }, { algorithm: 'RSA', rsaBits: 2048 }],
  ];
  for (const [env, key] of cases) assert.deepEqual(settings({ ...base, ...env })!.key, key, JSON.stringify(env));
});

test('PKCS8_KEY, ISTIO_META_CERT_SIGNER, CA_HEADER_* and a plaintext CA on 15010', () => {
  const got = settings({ ...base, PKCS8_KEY: 'True', ISTIO_META_CERT_SIGNER: 'clusterissuer', CA_HEADER_X_Tenant: 'blue', CA_HEADER_Trace: 'a=b' })!;
  assert.deepEqual([got.pkcs8Key, got.certSigner, got.headers], [true, 'clusterissuer', { x_tenant: 'blue', trace: 'a=b' }]);
  assert.equal(settings({ ...base, CA_ADDR: 'istiod.istio-system.svc:15010' })!.plaintext, true);
  assert.equal(settings({ POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' }, { discoveryAddress: 'istiod:15010' })!.plaintext, true);
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
    [{ ...base, ECC_CURVE: 'P521' }, /^env ECC_CURVE: "P521" is not P256 or P384/],
    [{ ...base, WORKLOAD_RSA_KEY_SIZE: '1024' }, /^env WORKLOAD_RSA_KEY_SIZE: "1024" is not a key size from 2048 to 8192 bits/],
    [{ ...base, WORKLOAD_RSA_KEY_SIZE: '2k' }, /^env WORKLOAD_RSA_KEY_SIZE: /],
    [{ ...base, PKCS8_KEY: 'yes' }, /^env PKCS8_KEY: "yes" is not a boolean \(true or false\)/],
    [{ ...base, CA_HEADER_Authorization: 'Bearer x' }, /^env CA_HEADER_Authorization: "authorization" is a header the CA call sets itself/],
    [{ ...base, 'CA_HEADER_grpc-timeout': '1S' }, /^env CA_HEADER_grpc-timeout: /],
    [{ ...base, 'CA_HEADER_a b': 'x' }, /^env CA_HEADER_a b: "a b" is not a header name/],
    [{ ...base, CA_HEADER_X: 'a\nb' }, /^env CA_HEADER_X: a header value cannot hold a line break/],
    [{ POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart', WORKLOAD_RSA_KEY_SIZE: '1' }, /^env WORKLOAD_RSA_KEY_SIZE: /],
  ];
  for (const [env, message] of cases)
    assert.throws(
      () => settings(env),
      (error: Error & { exitCode?: number }) => message.test(error.message) && error.exitCode === 2,
      JSON.stringify(env),
    );
});

test('the other CA variables are read only when the agent asks a CA', () => {
  assert.equal(settings({ SECRET_TTL: '10s', POD_NAMESPACE: 'a/b' }), undefined, 'no CA_ADDR');
  assert.equal(settings({ ...base, FILE_MOUNTED_CERTS: 'TRUE', WORKLOAD_KEY_ALGORITHM: 'DSA' }), undefined, 'FILE_MOUNTED_CERTS');
  assert.equal(settings({ ...base, SECRET_TTL: '10s' }, { certFilesMounted: true }), undefined, 'files in --certDir');
});

test('empty is unset, and the cluster ID has two names', () => {
  const empty = settings({
    ...base,
    TRUST_DOMAIN: '',
    WORKLOAD_KEY_ALGORITHM: '',
    SECRET_TTL: '',
    CA_ROOT_CA: '',
    ISTIOD_SAN: '',
    ECC_SIGNATURE_ALGORITHM: '',
    FILE_MOUNTED_CERTS: '',
  })!;
  assert.deepEqual(
    [empty.trustDomain, empty.key, empty.ttlSeconds, empty.rootsPath, empty.serverName],
    ['cluster.local', { algorithm: 'RSA', rsaBits: 2048 }, 86_400, './var/run/secrets/istio/root-cert.pem', 'istiod.istio-system.svc'],
  );
  assert.equal(settings({ ...base, CLUSTER_ID: 'c2' })!.clusterId, 'c2');
  assert.equal(settings({ ...base, CLUSTER_ID: 'c2', ISTIO_META_CLUSTER_ID: 'c1' })!.clusterId, 'c1');
});

test('PROV_CERT (a VM\'s /etc/certs): the CA\'s root is root-cert.pem there unless CA_ROOT_CA says; files there are no mounted identity', () => {
  const vm = { ...base, PROV_CERT: './etc/certs' };
  assert.equal(settings(vm)?.rootsPath, 'etc/certs/root-cert.pem');
  assert.equal(settings({ ...vm, CA_ROOT_CA: '/r.pem' })?.rootsPath, '/r.pem');
  assert.equal(settings(vm)?.provCert, './etc/certs');
  assert.ok(settings(vm, { certFilesMounted: true }), 'OUTPUT_CERTS may have written cert-chain.pem into PROV_CERT: the CA still issues');
});
