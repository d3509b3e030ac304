/**
 * Every address the tests and benches give a network namespace, a veth, a
 * route or a listener is loopback or in the benchmarking ranges
 * (198.18.0.0/15, 2001:2::/48): a packet that escapes a namespace by
 * mistake never heads for a private range or the internet.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;

/** Where addresses are made: the shared supports (every e2e helper lives there) and the benches (not the certificate builder, whose dotted numbers are OIDs). */
function addressFiles(): string[] {
  const list = (dir: string, keep: (name: string) => boolean) =>
    readdirSync(join(root, dir))
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'cert-builder.ts' && keep(name))
      .map((name) => join(dir, name));
  return [...list('test/support', () => true), ...list('bench', () => true)];
}

/** IPv4 literals (also the start of a template like `10.253.${…}`) and IPv6 ones that are neither loopback nor 2001:2::/48. */
function strayAddresses(text: string): string[] {
  const stray: string[] = [];
  // Comments may name an address (a cloud's metadata server, say); code may not.
  const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  for (const match of code.matchAll(/(?<![\w.])(\d{1,3})\.(\d{1,3})\.(?:\d{1,3}\.\d{1,3}|\d{1,3}\.\$\{|\$\{)(?![\d.])/g)) {
    const [a, b] = [Number(match[1]), Number(match[2])];
    const allowed = a === 127 || a === 0 || (a === 198 && (b === 18 || b === 19)) || a === 255;
    if (!allowed) stray.push(match[0]);
  }
  for (const match of code.matchAll(/(?<![\w:])(f[cd][0-9a-f]{2}|fe80|20[0-9a-f]{2}):[0-9a-f:]*/gi)) {
    if (!/^2001:2:/i.test(match[0])) stray.push(match[0]);
  }
  return stray;
}

test('test and bench supports give namespaces, links and routes only loopback and benchmarking addresses', () => {
  const found = addressFiles().flatMap((file) => strayAddresses(readFileSync(join(root, file), 'utf8')).map((address) => `${file}: ${address}`));
  assert.deepEqual(found, []);
});

test('the scan finds a private or public address, and passes the allowed ones', () => {
  assert.deepEqual(strayAddresses('ip addr add 10.253.0.1/30; `10.253.${x}`; 192.168.1.1; fd00:251::1; 8.8.8.8; // 10.9.9.9 in a comment'), [
    '10.253.0.1',
    '10.253.${',
    '192.168.1.1',
    '8.8.8.8',
    'fd00:251::1',
  ]);
  assert.deepEqual(strayAddresses('127.0.0.1 198.18.3.1 `198.19.${x}` 0.0.0.0 ::1 2001:2:0:251::1 255.255.255.252'), []);
});
