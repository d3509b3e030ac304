import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { localityBesideLabels, maxMetadataBytes, metadataBase, platformLocality, routableIpv6In } from './platform-locality.ts';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A fake metadata server on loopback, closed by the returned stack. */
async function metadataServer(handler: Handler): Promise<{ base: string; seen: string[] } & AsyncDisposable> {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return { base, seen, [Symbol.asyncDispose]: close };
}

const answer = (response: ServerResponse, status: number, body: string) => response.writeHead(status).end(body);

test('GCP: the zone from the metadata server (with its flavor header), the region from the zone', async () => {
  await using server = await metadataServer((request, response) =>
    request.headers['metadata-flavor'] === 'Google' && request.url === '/computeMetadata/v1/instance/zone'
      ? answer(response, 200, 'projects/1234/zones/europe-west4-b\n') : answer(response, 404, ''));
  assert.deepEqual(await platformLocality({ cloudPlatform: 'gcp', base: server.base }), { locality: 'europe-west4/europe-west4-b' });
  assert.deepEqual(await platformLocality({ cloudPlatform: 'gcp', gceMetadataHost: server.base.slice('http://'.length) }), { locality: 'europe-west4/europe-west4-b' });
});

test('GCP: GCP_ZONE is taken without asking the server', async () => {
  await using server = await metadataServer((_request, response) => answer(response, 500, ''));
  assert.deepEqual(await platformLocality({ cloudPlatform: 'gcp', gcpZone: 'us-east1-c', base: server.base }), { locality: 'us-east1/us-east1-c' });
  assert.deepEqual(server.seen, []);
});

test('AWS: an IMDSv2 token, then the placement under it', async () => {
  await using server = await metadataServer((request, response) => {
    if (request.method === 'PUT' && request.url === '/latest/api/token' && request.headers['x-aws-ec2-metadata-token-ttl-seconds'] === '60') return answer(response, 200, 'tok');
    if (request.headers['x-aws-ec2-metadata-token'] !== 'tok') return answer(response, 401, '');
    if (request.url === '/latest/meta-data/placement/region') return answer(response, 200, 'eu-west-1');
    if (request.url === '/latest/meta-data/placement/availability-zone') return answer(response, 200, 'eu-west-1a');
    answer(response, 404, '');
  });
  assert.deepEqual(await platformLocality({ cloudPlatform: 'aws', base: server.base }), { locality: 'eu-west-1/eu-west-1a' });
  const placement = '/latest/meta-data/placement';
  assert.deepEqual(server.seen, ['PUT /latest/api/token', `GET ${placement}/region`, `GET ${placement}/availability-zone`]);
});

test('Azure: the instance document\'s location and zone, asked with Metadata: True', async () => {
  await using server = await metadataServer((request, response) =>
    request.headers.metadata === 'True' && request.url === '/metadata/instance?api-version=2019-08-15'
      ? answer(response, 200, JSON.stringify({ compute: { location: 'westeurope', zone: '2', vmId: 'x' } })) : answer(response, 400, ''));
  assert.deepEqual(await platformLocality({ cloudPlatform: 'azure', base: server.base }), { locality: 'westeurope/2' });
});

test('a server that never answers, answers too much, or answers nonsense gives a problem, never a throw or a wait past the deadline', async () => {
  await using silent = await metadataServer(() => undefined);
  assert.match((await platformLocality({ cloudPlatform: 'aws', base: silent.base, timeoutMs: 300 }))!.problem!, /no answer within 300 ms/);
  await using flood = await metadataServer((_request, response) => answer(response, 200, 'x'.repeat(maxMetadataBytes + 1)));
  assert.match((await platformLocality({ cloudPlatform: 'azure', base: flood.base }))!.problem!, /over 65536 bytes/);
  await using odd = await metadataServer((request, response) => answer(response, 200, request.url?.startsWith('/metadata') ? '{"compute":{"location":"a/b"}}' : 'nozone'));
  assert.match((await platformLocality({ cloudPlatform: 'azure', base: odd.base }))!.problem!, /no region/);
  assert.match((await platformLocality({ cloudPlatform: 'gcp', base: odd.base }))!.problem!, /names no region/);
  assert.match((await platformLocality({ cloudPlatform: 'aws', base: 'http://127.0.0.1:1' }))!.problem!, /ECONNREFUSED/);
});

test('unset or none asks nothing; a name Istio does not know is a problem, not a probe', async () => {
  assert.equal(await platformLocality({ cloudPlatform: undefined }), undefined);
  assert.equal(await platformLocality({ cloudPlatform: 'none' }), undefined);
  assert.match((await platformLocality({ cloudPlatform: 'openstack' }))!.problem!, /"openstack" is not aws, azure, gcp or none/);
});

test('a pod label\'s locality wins: the platform is not asked', async () => {
  await using server = await metadataServer((_request, response) => answer(response, 200, 'projects/1/zones/us-east1-c'));
  const input = { cloudPlatform: 'gcp', base: server.base };
  assert.equal(await localityBesideLabels({ LABELS: { 'topology.istio.io/locality': 'r.z' } }, input), undefined);
  assert.deepEqual(server.seen, []);
  assert.deepEqual(await localityBesideLabels({ LABELS: { app: 'a' } }, input), { locality: 'us-east1/us-east1-c' });
});

test('the metadata server\'s address: GCE_METADATA_HOST for GCP, AWS\'s IPv6 one in a pod with IPv6, else the one link-local address', () => {
  // Compared, never dialled: the real metadata addresses stay out of the tests.
  const linkLocal = metadataBase({ cloudPlatform: 'gcp' });
  assert.equal(linkLocal, 'http://169.254.169.254');
  assert.equal(metadataBase({ cloudPlatform: 'aws' }), linkLocal);
  assert.equal(metadataBase({ cloudPlatform: 'azure', ipv6: true }), linkLocal);
  assert.match(metadataBase({ cloudPlatform: 'aws', ipv6: true }), /^http:\/\/\[[0-9a-f:]+\]$/);
  assert.equal(metadataBase({ cloudPlatform: 'gcp', gceMetadataHost: 'metadata.google.internal:8080' }), 'http://metadata.google.internal:8080');
  assert.equal(metadataBase({ cloudPlatform: 'aws', ipv6: true, base: 'http://127.0.0.1:9' }), 'http://127.0.0.1:9');
});

test('a status other than 200 is a problem naming the URL and the status', async () => {
  await using server = await metadataServer((request, response) => answer(response, request.method === 'PUT' ? 403 : 200, 'x'));
  assert.deepEqual(await platformLocality({ cloudPlatform: 'aws', base: server.base }), { problem: `${server.base}/latest/api/token: status 403` });
  assert.deepEqual(server.seen, ['PUT /latest/api/token']);
});

test('an answer of exactly the size bound is read whole, in as many chunks as it comes', async () => {
  const document = JSON.stringify({ compute: { location: 'westeurope', zone: '3' } });
  await using server = await metadataServer((_request, response) => {
    response.writeHead(200);
    // Padding inside the document keeps it JSON; the chunks arrive apart.
    const padded = document.slice(0, -1) + ' '.repeat(maxMetadataBytes - document.length) + '}';
    response.write(padded.slice(0, 1000));
    setImmediate(() => response.end(padded.slice(1000)));
  });
  assert.deepEqual(await platformLocality({ cloudPlatform: 'azure', base: server.base }), { locality: 'westeurope/3' });
});

test('the parts of a locality: a region alone when the zone does not fit a part, a problem when the region does not', async () => {
  const cases: [unknown, PlatformLocalityResult][] = [
    [{ compute: { location: 'westeurope' } }, { locality: 'westeurope' }],
    [{ compute: { location: 'westeurope', zone: 'a/b' } }, { locality: 'westeurope' }],
    [{ compute: { location: 'westeurope', zone: 7 } }, { locality: 'westeurope' }],
    [{ compute: { location: 'r'.repeat(63), zone: 'z'.repeat(63) } }, { locality: `${'r'.repeat(63)}/${'z'.repeat(63)}` }],
    [{ compute: { location: 'r'.repeat(64), zone: '1' } }, { problem: 'the metadata server gave no region' }],
    [{ compute: { location: 'x/westeurope', zone: '1' } }, { problem: 'the metadata server gave no region' }],
    [{ compute: { location: 'westeurope/x', zone: '1' } }, { problem: 'the metadata server gave no region' }],
    [{ compute: { location: 5, zone: '1' } }, { problem: 'the metadata server gave no region' }],
    [{ compute: { location: '', zone: '1' } }, { problem: 'the metadata server gave no region' }],
    [{ vmId: 'x' }, { problem: 'the metadata server gave no region' }],
  ];
  for (const [document, want] of cases) {
    await using server = await metadataServer((_request, response) => answer(response, 200, JSON.stringify(document)));
    assert.deepEqual(await platformLocality({ cloudPlatform: 'azure', base: server.base }), want, JSON.stringify(document));
  }
});
type PlatformLocalityResult = Awaited<ReturnType<typeof platformLocality>>;

test('GCP: a zone names its region only as <area>-<region>-<zone>; the problem quotes at most 64 characters of it', async () => {
  const cases: [string, PlatformLocalityResult][] = [
    ['us-east1-c', { locality: 'us-east1/us-east1-c' }],
    ['us-east1-cc', { locality: 'us-east1/us-east1-cc' }],
    ['us-east1', { problem: 'zone "us-east1" names no region' }],
    ['a-b-c-d', { problem: 'zone "a-b-c-d" names no region' }],
    ['x-us-east1-c', { problem: 'zone "x-us-east1-c" names no region' }],
    ['us-east1-c-', { problem: 'zone "us-east1-c-" names no region' }],
    [`${'z'.repeat(70)}`, { problem: `zone "${'z'.repeat(64)}" names no region` }],
  ];
  for (const [zone, want] of cases) assert.deepEqual(await platformLocality({ cloudPlatform: 'gcp', gcpZone: zone }), want, zone);
});

test('a platform name Istio does not know is quoted to 32 characters', async () => {
  assert.deepEqual(await platformLocality({ cloudPlatform: 'o'.repeat(40) }), { problem: `"${'o'.repeat(32)}" is not aws, azure, gcp or none` });
});

test('INSTANCE_IPS has a routable IPv6 address: any of its entries (trimmed) that is IPv6 outside fe80::/10', () => {
  const cases: [unknown, boolean][] = [
    [undefined, false],
    [5, false],
    ['', false],
    ['198.18.0.1', false],
    ['2001:2::5', true],
    ['198.18.0.1, 2001:2::5', true],
    ['2001:2::5 ,198.18.0.1', true],
    ['fe80::1', false],
    [' FE80::1', false],
    ['febf::1,198.18.0.1', false],
    ['fec0::1', true],
    ['2001:2::fe80', true],
  ];
  for (const [ips, want] of cases) assert.equal(routableIpv6In(ips), want, String(ips));
});

// A reader deaf to the response's error would wait forever (the deadline only cuts a request still running): 10 s fails it by name.
test('an answer cut off mid-body is a problem, not a crash or a wait', { timeout: 10_000 }, async () => {
  await using server = await metadataServer((_request, response) => {
    response.writeHead(200, { 'content-length': '100' });
    response.write('partial', () => response.socket?.destroy());
  });
  assert.match((await platformLocality({ cloudPlatform: 'azure', base: server.base }))!.problem!, /aborted|ECONNRESET|socket hang up/);
});
