import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FileRead } from '../../src/watch/cert-set.ts';

/** Two self-signed certificates with keys, made once (openssl; no clock involved). */
export const pems = (() => {
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

export const files = (pair: { cert: Buffer; key: Buffer }, root = pems.a.cert): FileRead[] => [
  { path: '/certs/cert-chain.pem', content: pair.cert }, { path: '/certs/key.pem', content: pair.key }, { path: '/certs/root-cert.pem', content: root },
];

