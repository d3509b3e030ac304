import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCidrs } from '../shared/cidr.ts';
import { refusedAddress, refusedRealm } from './ssrf.ts';

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

test('the reasons, word for word (a caller refuses on any non-empty reason)', () => {
  const realms: [string, string | undefined][] = [
    ['not a url', 'token realm "not a url" is not a URL'],
    ['ftp://auth.test/t', 'token realm scheme ftp: is not allowed'],
    ['https://localhost/t', 'token realm localhost is not allowed'],
    ['https://metadata.google.internal/t', 'token realm metadata.google.internal is not allowed'],
    ['https://127.0.0.1/t', 'token realm 127.0.0.1 is a private, loopback or link-local address'],
    ['https://[fc00::1]/t', 'token realm fc00::1 is a private, loopback or link-local address'],
    ['https://[fd00:ec2::254]/t', 'token realm fd00:ec2::254 is a private, loopback or link-local address'],
    ['https://169.254.169.254/t', 'token realm 169.254.169.254 is a private, loopback or link-local address'],
    ['https://[fe80::1]/t', 'token realm fe80::1 is a private, loopback or link-local address'],
    ['http://198.18.0.1/t', undefined],
    ['https://[2001:2::1]/t', undefined],
    ['https://auth.test/t', undefined],
  ];
  for (const [realm, reason] of realms) assert.equal(refusedRealm(realm), reason, realm);
  const addresses: [string, string | undefined][] = [
    ['169.254.169.254', 'connection to 169.254.169.254 refused: link-local and cloud metadata addresses are not fetched from'],
    ['::FFFF:169.254.169.254', 'connection to ::FFFF:169.254.169.254 refused: link-local and cloud metadata addresses are not fetched from'],
    ['fe80::1', 'connection to fe80::1 refused: link-local and cloud metadata addresses are not fetched from'],
    ['::ffff:198.18.0.1', undefined],
    ['2001:2::1', undefined],
    ['::ffff:1.2.3', undefined],
  ];
  for (const [address, reason] of addresses) assert.equal(refusedAddress(address), reason, address);
  const blocked = parseCidrs('198.18.0.0/15');
  assert.equal(refusedAddress('::ffff:198.19.0.1', blocked), 'connection to ::ffff:198.19.0.1 refused: in BLOCKED_CIDRS_IN_WASM_FETCH');
  assert.equal(refusedAddress('198.20.0.1', blocked), undefined);
});

test('CIDR prefixes at their bounds are taken; an empty, signed or spaced prefix is not', () => {
  const edges = parseCidrs('198.18.0.1/32,2001:2::1/128,0.0.0.0/0');
  assert.ok(refusedAddress('198.18.0.1', edges));
  assert.ok(refusedAddress('2001:2::1', edges));
  assert.ok(refusedAddress('203.0.113.9', edges), '/0 blocks every IPv4 address');
  assert.equal(refusedAddress('2001:2::2', edges), undefined);
  for (const bad of ['198.18.0.0/', '198.18.0.0/-1', '198.18.0.0/+8', '198.18.0.0/1 6', '/8', '198.18.0.0/8/8']) {
    assert.throws(() => parseCidrs(bad), { message: `"${bad}" is not a CIDR (e.g. 10.0.0.0/8)` }, bad);
  }
  assert.equal(refusedAddress('198.18.0.1', parseCidrs('')), undefined, 'an empty list blocks nothing');
});

test('only ::ffff:a.b.c.d is an IPv4 address; only all-zero IPv6 is the unspecified address', () => {
  assert.equal(refusedAddress('1::ffff:169.254.169.254'), undefined, 'a global IPv6 address that merely ends in a dotted quad');
  const loopback = parseCidrs('127.0.0.0/8');
  for (const address of ['2001:db8::', '::2']) assert.equal(refusedAddress(address, loopback), undefined, address);
});
