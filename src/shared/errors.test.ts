import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer } from 'node:tls';
import { test } from 'node:test';
import { buildCert, ecKey } from '../../test/support/cert-builder.ts';
import { describe, withoutNodeHints } from './errors.ts';

/** What Node says when a real handshake meets a server certificate it cannot verify. */
async function verifyFailure(): Promise<Error> {
  const key = ecKey();
  const { pem } = buildCert({ subject: 'server', key, notBefore: Date.now() - 60_000, notAfter: Date.now() + 3_600_000 });
  const server = createServer({ key: key.export({ type: 'pkcs8', format: 'pem' }), cert: pem }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const client = connect({ host: '127.0.0.1', port: (server.address() as { port: number }).port, servername: 'server' });
    const [error] = (await once(client, 'error')) as [Error];
    return error;
  } finally {
    server.close();
  }
}

test("Node's --use-system-ca advice is left out of what is logged; the reason stays", async () => {
  const error = await verifyFailure();
  assert.match(error.message, /--use-system-ca/, "Node's message still carries the advice (else this test proves nothing)");
  assert.equal(describe(error), 'self-signed certificate');
  assert.equal(withoutNodeHints(`TLS: not trusted (X: ${error.message}); root /r.pem`), 'TLS: not trusted (X: self-signed certificate); root /r.pem');
  assert.equal(describe('plain words'), 'plain words');
});
