import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HeldCertificate } from './credentials.ts';
import { RefusedCertificate } from './dial.ts';
import type { UpstreamOptions } from './material.ts';

const certificate = (chain: string): HeldCertificate => ({ chain: Buffer.from(chain), key: Buffer.from('key'), expiresAt: Number.MAX_SAFE_INTEGER });

test('a certificate the discovery server refused is held back until the CA issues another', () => {
  let held: HeldCertificate | undefined = certificate('first');
  const upstream: UpstreamOptions = { address: { host: 'istiod', port: 15012 }, policy: 'TLS', certDir: '/certs', heldCertificate: () => held };
  const refused = new RefusedCertificate();
  const offered = () => refused.filter(upstream).heldCertificate?.()?.chain.toString();
  const steps: [step: string, act: () => void, expected: string | undefined][] = [
    ['nothing refused yet', () => undefined, 'first'],
    ['the server refuses it', () => refused.refuse(Buffer.from('first')), undefined],
    ['the same bytes again (a re-read)', () => (held = certificate('first')), undefined],
    ['the CA renews', () => (held = certificate('renewed')), 'renewed'],
    ['the renewed one is refused too', () => refused.refuse(Buffer.from('renewed')), undefined],
  ];
  for (const [step, act, expected] of steps) {
    act();
    assert.equal(offered(), expected, step);
  }
  assert.equal(refused.filter({ ...upstream, heldCertificate: undefined }).heldCertificate, undefined, 'no CA: nothing to hold back');
});
