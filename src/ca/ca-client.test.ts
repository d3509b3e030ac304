import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createSecureServer, createServer, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { status } from '@grpc/grpc-js';
import { pems } from '../../test/support/self-signed.ts';
import { frame } from '../grpc/grpc-frame.ts';
import { GrpcStatus } from '../grpc/grpc-status.ts';
import { GrpcServerCall } from '../grpc/server-call.ts';
import { caChannel, caCredentials, caFailure, createCertificate, type CaTls } from './ca-client.ts';

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

/**
 * A CA on TLS (or plaintext) that answers every gRPC call UNIMPLEMENTED
 * (with the token `ok` an empty answer: an empty chain), counting the
 * connections it accepts and those still open.
 */
async function caServer(t: TestContext, { tls } = { tls: true }) {
  const server = tls ? createSecureServer({ key: pems.a.key, cert: pems.a.cert }) : createServer();
  const sessions = new Set<ServerHttp2Session>();
  let connections = 0;
  server.on(tls ? 'secureConnection' : 'connection', () => connections++);
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const call = new GrpcServerCall(stream);
    if (headers.authorization !== 'Bearer ok') return call.finish(GrpcStatus.UNIMPLEMENTED, 'not this CA');
    call.respond();
    stream.end(frame(Buffer.alloc(0)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const session of sessions) session.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const open = () => sessions.size;
  /** Resolves once at most `left` connections are open: the rest close on their own (a replaced or dropped client, the idle timeout, a close()). */
  const allClosedBut = async (left: number) => {
    while (sessions.size > left) await once([...sessions][0]!, 'close');
  };
  return { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, open, allClosedBut };
}

test('the CA\'s TLS credentials are made once per trust config, and every call still opens a connection of its own', async (t) => {
  const ca = await caServer(t);
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
    // Without a kept channel (caChannel) every call has a connection of its own.
    assert.equal(ca.connections(), index + 1, `${row.name}: connections`);
  }
});

test('a kept channel serves call after call on one connection, and connects again after a change, a failed call, or its close', { timeout: 20_000 }, async (t) => {
  const ca = await caServer(t);
  const moved = await caServer(t);
  const channel = caChannel();
  t.after(() => channel.close());
  const credentials = caCredentials();
  const call = async (tls: CaTls, token = 'ok', address = ca.address) => {
    const result = await createCertificate({
      endpoint: { address, tls }, request: { csr: 'CSR', validitySeconds: 60 }, token, timeoutMs: 20_000, credentials, channel,
    });
    return result.ok ? 'ok' : result.code;
  };
  const a = { roots: pems.a.cert, serverName: 'a' };
  const rows: { name: string; run: () => Promise<string>; answer: string; connections: number; open: number }[] = [
    { name: 'the first call', run: () => call(a), answer: 'ok', connections: 1, open: 1 },
    { name: 'the same endpoint and trust', run: () => call(a), answer: 'ok', connections: 1, open: 1 },
    { name: 'the same roots read again (equal bytes)', run: () => call({ ...a, roots: Buffer.from(pems.a.cert) }), answer: 'ok', connections: 1, open: 1 },
    { name: 'changed roots: the old connection closed', run: () => call({ ...a, roots: Buffer.concat([pems.b.cert, pems.a.cert]) }), answer: 'ok', connections: 2, open: 1 },
    { name: 'back to the first roots', run: () => call(a), answer: 'ok', connections: 3, open: 1 },
    { name: 'another name for the CA', run: () => call({ ...a, serverName: 'A' }), answer: 'ok', connections: 4, open: 1 },
    { name: 'a failed call: closed', run: () => call(a, 'refused'), answer: 'UNIMPLEMENTED', connections: 5, open: 0 },
    { name: 'the call after it connects afresh', run: () => call(a), answer: 'ok', connections: 6, open: 1 },
    { name: 'the CA at another address: this one closed', run: () => call(a, 'ok', moved.address), answer: 'ok', connections: 6, open: 0 },
    { name: 'back at the first address', run: () => call(a), answer: 'ok', connections: 7, open: 1 },
  ];
  for (const row of rows) {
    assert.equal(await row.run(), row.answer, `${row.name}: answer`);
    await ca.allClosedBut(row.open);
    assert.equal(ca.connections(), row.connections, `${row.name}: connections`);
    assert.equal(ca.open(), row.open, `${row.name}: open`);
  }
  channel.close();
  await ca.allClosedBut(0);
  assert.equal(await call(a), 'ok', 'a call after close() still goes through');
  await ca.allClosedBut(0);
  assert.equal(ca.connections(), 8, 'after close(): a connection of its own');
  assert.equal(moved.connections(), 1);
});

test('a kept channel closes its connection after its idle time without a call', { timeout: 20_000 }, async (t) => {
  const ca = await caServer(t);
  const channel = caChannel(1000); // grpc-js's least idle timeout
  t.after(() => channel.close());
  const result = await createCertificate({
    endpoint: { address: ca.address, tls: { roots: pems.a.cert, serverName: 'a' } }, request: { csr: 'CSR', validitySeconds: 60 }, token: 'ok', timeoutMs: 20_000, channel,
  });
  assert.deepEqual(result, { ok: true, chain: [] });
  assert.equal(ca.open(), 1, 'kept after the call');
  // The idle timeout, not close(): the test would time out otherwise. grpc-js
  // drops the idle channel's connection at its subchannel pool's next sweep (every 10 s).
  await ca.allClosedBut(0);
  assert.equal(ca.connections(), 1);
});

test('a plaintext CA\'s kept channel is kept too', async (t) => {
  const ca = await caServer(t, { tls: false });
  const channel = caChannel();
  t.after(() => channel.close());
  for (let call = 0; call < 3; call++) {
    const result = await createCertificate({ endpoint: { address: ca.address }, request: { csr: 'CSR', validitySeconds: 60 }, token: 'ok', timeoutMs: 20_000, channel });
    assert.deepEqual(result, { ok: true, chain: [] });
  }
  assert.equal(ca.connections(), 1);
});
