import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone } from '../support/agent.ts';
import { tempDir } from '../support/cleanup.ts';
import { SdsTestClient } from '../support/sds-client.ts';
import { epochLive, servedSerial } from '../support/tls-rig.ts';
import { startSdsRig, type SdsRig } from '../support/sds-rig.ts';

const get = async (port: number, path: string) => (await fetch(`http://127.0.0.1:${port}${path}`)).text();
const sdsSocket = (rig: SdsRig) => join(rig.agent.dir, 'sds.sock');
const normal = (serial: string) => BigInt(`0x${serial}`).toString(16).toUpperCase();

interface DebugStream { secrets: Array<{ name: string; serial: string; expiresAt: string }>; waiting: Array<{ name: string; reason: string }> }
const debugStreams = async (rig: SdsRig) => (JSON.parse(await get(rig.statusPort, '/debug/sds')) as { streams: DebugStream[] }).streams;

async function waitingReason(rig: SdsRig, name: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const reason = (await debugStreams(rig)).flatMap((stream) => stream.waiting).find((waiting) => waiting.name === name)?.reason;
    if (reason && reason !== 'not available yet') return reason;
    await sleep(100);
  }
  throw new Error(`${name} never showed a reason in /debug/sds`);
}

/** A raw HTTP/2 call on the SDS socket; resolves with the grpc-status it ends with. */
function rawCall(socketPath: string, path: string, body: Buffer): Promise<string | undefined> {
  const session: ClientHttp2Session = http2Connect('http://localhost', { createConnection: () => connect(socketPath) });
  session.on('error', () => undefined);
  return new Promise((resolve) => {
    const request = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc' });
    let status: string | undefined;
    const take = (headers: Record<string, unknown>) => (status ??= headers['grpc-status'] as string | undefined);
    request.on('response', take).on('trailers', take).on('error', () => undefined);
    request.on('close', () => (session.close(), resolve(status)));
    request.resume();
    request.end(body);
  });
}

describe('the SDS server: debug, metrics and bad input', () => {
  it('/debug/sds shows what each stream holds, never key material; metrics count pushes and expiry', { timeout: 60_000 }, async () => {
    const rig = await startSdsRig();
    try {
      await epochLive(rig.agent, 0);
      const serial = await servedSerial(rig.listenerPort);
      const body = await get(rig.statusPort, '/debug/sds');
      const held = (JSON.parse(body) as { streams: DebugStream[] }).streams.flatMap((stream) => stream.secrets);
      assert.ok(held.some((secret) => secret.name === 'default' && normal(secret.serial) === serial), body);
      assert.ok(Date.parse(held[0]!.expiresAt) > Date.now());
      assert.doesNotMatch(body, /PRIVATE KEY|BEGIN/, 'no PEM in debug output');
      const metrics = await get(rig.statusPort, '/stats/prometheus');
      assert.match(metrics, /^istio_agent_sds_pushes_total\{resource="default"\} [1-9]/m);
      const expiry = Number(/^istio_agent_cert_expiry_seconds\{resource_name="default"\} (\d+)/m.exec(metrics)?.[1]);
      assert.ok(expiry > 3600 && expiry <= 2 * 86400, `seconds to expiry: ${expiry}`);
      assert.doesNotMatch(await get(rig.statusPort, '/stats/prometheus'), /PRIVATE KEY/);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('unknown names and missing or non-PEM files wait with a reason; a file that appears is served as read', { timeout: 60_000 }, async () => {
    await using cleanup = new AsyncDisposableStack();
    const rig = await startSdsRig();
    cleanup.defer(async () => {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    });
    const dir = await tempDir(cleanup, 'sds-files-');
    const clients: SdsTestClient[] = [];
    cleanup.defer(() => clients.forEach((one) => one.close()));
    const client = (names: string[]) => {
      const one = new SdsTestClient(sdsSocket(rig));
      clients.push(one);
      one.subscribe(names);
      return one;
    };
    await epochLive(rig.agent, 0);
    const serial = await servedSerial(rig.listenerPort);
    const unknown = client(['kubernetes://nope']);
    const fileCert = `file-cert:${dir}/cert.pem~${dir}/key.pem`;
    const missing = client([fileCert]);
    await writeFile(join(dir, 'junk.pem'), 'not a certificate\n');
    client([`file-root:${dir}/junk.pem`]);
    assert.match(await waitingReason(rig, 'kubernetes://nope'), /unknown resource name/);
    assert.match(await waitingReason(rig, fileCert), /does not exist/);
    assert.match(await waitingReason(rig, `file-root:${dir}/junk.pem`), /not a PEM certificate/);
    assert.equal(unknown.responses.length + missing.responses.length, 0, 'nothing is sent for what cannot be served');
    const pair = await rig.ca.issue('localhost');
    await writeFile(join(dir, 'cert.pem'), pair.cert);
    await writeFile(join(dir, 'key.pem'), pair.key);
    const served = await missing.waitFor((response) => response.secrets.some((secret) => secret.serial === pair.serial));
    assert.equal(served.secrets[0]!.key, pair.key, 'the served key is the bytes that were checked');
    const system = client(['file-root:system']);
    assert.equal((await system.waitFor((response) => response.secrets.length > 0)).secrets[0]!.kind, 'validation-context');
    const metrics = await get(rig.statusPort, '/stats/prometheus');
    assert.match(metrics, /^istio_agent_sds_errors_total\{reason="unknown_resource"\} [1-9]/m);
    assert.match(metrics, /^istio_agent_sds_errors_total\{reason="bad_files"\} [1-9]/m);
    assert.equal(await servedSerial(rig.listenerPort), serial, 'Envoy is unaffected');
  });

  it('garbage on the socket and unimplemented methods end that call only; the agent lives', { timeout: 60_000 }, async () => {
    const rig = await startSdsRig();
    try {
      await epochLive(rig.agent, 0);
      const serial = await servedSerial(rig.listenerPort);
      await new Promise<void>((resolve) => {
        const raw = connect(sdsSocket(rig), () => raw.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff garbage'));
        raw.on('error', () => resolve()).on('close', () => resolve());
        raw.resume();
      });
      const service = '/envoy.service.secret.v3.SecretDiscoveryService';
      assert.equal(await rawCall(sdsSocket(rig), `${service}/StreamSecrets`, Buffer.from([7, 0, 0, 0, 1, 0])), '3', 'a bad frame flag: INVALID_ARGUMENT');
      assert.equal(
        await rawCall(sdsSocket(rig), `${service}/StreamSecrets`, Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff])),
        '3',
        'a message that is not protobuf: INVALID_ARGUMENT',
      );
      assert.equal(await rawCall(sdsSocket(rig), `${service}/DeltaSecrets`, Buffer.alloc(0)), '12', 'Delta: UNIMPLEMENTED');
      assert.equal(await rawCall(sdsSocket(rig), `${service}/FetchSecrets`, Buffer.alloc(0)), '12', 'Fetch: UNIMPLEMENTED');
      const client = new SdsTestClient(sdsSocket(rig));
      client.subscribe(['default']);
      assert.equal((await client.waitFor((response) => response.secrets.length > 0)).secrets[0]!.serial, serial, 'the server still serves');
      client.close();
      assert.equal(await servedSerial(rig.listenerPort), serial);
      assert.deepEqual(rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch), [0]);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });
});
