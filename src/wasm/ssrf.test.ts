import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCidrs, refusedAddress, refusedRealm } from './ssrf.ts';

test('link-local and metadata addresses are refused; private and loopback are not', () => {
  const cases: [string, boolean][] = [
    ['169.254.169.254', true],
    ['169.254.0.1', true],
    ['fe80::1', true],
    ['::ffff:169.254.169.254', true],
    ['100.100.100.200', true],
    ['fd00:ec2::254', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['192.168.1.1', false],
    ['::1', false],
    ['8.8.8.8', false],
    ['registry.example', false],
  ];
  for (const [address, refused] of cases) assert.equal(refusedAddress(address) !== undefined, refused, address);
});

test('token realms on private, loopback and link-local hosts are refused', () => {
  const cases: [string, boolean][] = [
    ['https://auth.example/token', false],
    ['http://198.18.0.1/token', false],
    ['https://127.0.0.1/token', true],
    ['https://localhost/token', true],
    ['https://10.0.0.1/token', true],
    ['https://[::1]/token', true],
    ['https://0.0.0.0/token', true],
    ['https://0/token', true],
    ['https://[::]/token', true],
    ['https://169.254.169.254/token', true],
    ['http://metadata.google.internal/x', true],
    ['file:///etc/passwd', true],
    ['not a url', true],
  ];
  for (const [realm, refused] of cases) assert.equal(refusedRealm(realm) !== undefined, refused, realm);
});

test('BLOCKED_CIDRS_IN_WASM_FETCH adds ranges; a bad CIDR is refused', () => {
  const blocked = parseCidrs(' 10.0.0.0/8, fd00::/8 ,');
  assert.match(refusedAddress('10.1.2.3', blocked) ?? '', /BLOCKED_CIDRS_IN_WASM_FETCH/);
  assert.ok(refusedAddress('fd12::1', blocked));
  assert.equal(refusedAddress('192.168.0.1', blocked), undefined);
  assert.ok(refusedAddress('169.254.169.254', blocked), 'the built-in ranges stay');
  for (const bad of ['10.0.0.0', '10.0.0.0/33', 'host/8', '::/129']) assert.throws(() => parseCidrs(bad), /not a CIDR/, bad);
});

test('0.0.0.0 and :: reach loopback: blocking loopback blocks them too', () => {
  const v4 = parseCidrs('127.0.0.0/8');
  const v6 = parseCidrs('::1/128');
  for (const address of ['0.0.0.0', '::', '::ffff:0.0.0.0', '0:0:0:0:0:0:0:0']) {
    assert.match(refusedAddress(address, v4) ?? '', /BLOCKED_CIDRS_IN_WASM_FETCH/, `${address} with 127.0.0.0/8`);
    assert.match(refusedAddress(address, v6) ?? '', /BLOCKED_CIDRS_IN_WASM_FETCH/, `${address} with ::1`);
  }
  assert.equal(refusedAddress('0.0.0.0'), undefined, 'loopback is allowed unless the operator blocks it');
  assert.equal(refusedAddress('0.0.0.1', v4), undefined, 'only the unspecified address itself');
  assert.equal(refusedAddress('198.18.0.1', v4), undefined);
});
