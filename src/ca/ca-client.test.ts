import assert from 'node:assert/strict';
import { createSecureServer, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { status } from '@grpc/grpc-js';
import { pems } from '../../test/support/self-signed.ts';
import { caCredentials, caFailure, createCertificate, type CaTls } from './ca-client.ts';

const grpcError = (code: number, details: string) => Object.assign(new Error(details), { code, details, metadata: undefined as never });

test('a failed CA call reads as its cause: a CA that resets the stream at its deadline is the deadline, earlier it is a cancel', () => {
  const rows: { code: number; late: boolean; want: string }[] = [
    { code: status.DEADLINE_EXCEEDED, late: true, want: 'DEADLINE_EXCEEDED' },
    { code: status.CANCELLED, late: true, want: 'DEADLINE_EXCEEDED' },
    { code: status.CANCELLED, late: false, want: 'CANCELLED' },
    { code: status.PERMISSION_DENIED, late: true, want: 'PERMISSION_DENIED' },
  ];
  for (const row of rows) {
    const result = caFailure(status, grpcError(row.code, 'Call cancelled'), { timeoutMs: 10_000, late: row.late });
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.code, row.want, `${status[row.code]} late=${row.late}`);
    if (row.want === 'DEADLINE_EXCEEDED') assert.match(!result.ok ? result.message : '', /no answer within 10000 ms/);
  }
});

/** A TLS server that answers every gRPC call UNIMPLEMENTED, counting the connections it accepts. */
async function tlsCa(t: TestContext) {
  const server = createSecureServer({ key: pems.a.key, cert: pems.a.cert });
  const sessions = new Set<ServerHttp2Session>();
  let connections = 0;
  server.on('secureConnection', () => connections++);
  server.on('session', (session) => sessions.add(session));
  server.on('stream', (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const session of sessions) session.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections };
}

test('the CA\'s TLS credentials are made once per trust config, and every call still opens a connection of its own', async (t) => {
  const ca = await tlsCa(t);
  let made = 0;
  const credentials = caCredentials((grpc, tls) => (made++, grpc.credentials.createSsl(tls.roots, tls.key ?? null, tls.cert ?? null)));
  const call = async (tls: CaTls) => {
    const result = await createCertificate({
      endpoint: { address: ca.address, tls }, request: { csr: 'CSR', validitySeconds: 60 }, token: 'token', timeoutMs: 20_000, credentials,
    });
    assert.deepEqual(result.ok ? 'ok' : result.code, 'UNIMPLEMENTED', JSON.stringify(result)); // through TLS to the CA's answer
  };
  const rows: { name: string; tls: CaTls; made: number }[] = [
    { name: 'the first call', tls: { roots: pems.a.cert, serverName: 'a' }, made: 1 },
    { name: 'the same roots', tls: { roots: pems.a.cert, serverName: 'a' }, made: 1 },
    { name: 'the same roots read again (equal bytes)', tls: { roots: Buffer.from(pems.a.cert), serverName: 'a' }, made: 1 },
    { name: 'changed roots', tls: { roots: Buffer.concat([pems.b.cert, pems.a.cert]), serverName: 'a' }, made: 2 },
    { name: 'a PROV_CERT identity added', tls: { roots: Buffer.concat([pems.b.cert, pems.a.cert]), serverName: 'a', ...pems.b }, made: 3 },
    { name: 'the same identity again', tls: { roots: Buffer.concat([pems.b.cert, pems.a.cert]), serverName: 'a', ...pems.b }, made: 3 },
  ];
  for (const [index, row] of rows.entries()) {
    await call(row.tls);
    assert.equal(made, row.made, `${row.name}: credentials made`);
    // Equal credentials must not share a connection: a CA that changed its certificate is met at the next call.
    assert.equal(ca.connections(), index + 1, `${row.name}: connections`);
  }
});
