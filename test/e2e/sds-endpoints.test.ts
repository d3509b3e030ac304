import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone } from '../support/agent.ts';
import { suiteCleanup, tempDir, type Cleanup } from '../support/cleanup.ts';
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

/** Starts the SDS rig, undone by the enclosing suite's cleanup (also when a later step of `before` fails), and waits for Envoy's first epoch. */
async function startLiveRig(cleanup: Cleanup): Promise<{ rig: SdsRig; serial: string }> {
  const rig = await startSdsRig();
  cleanup.defer(async () => {
    await rig.close();
    await assertGone(rig.agent.envoyPids());
  });
  await epochLive(rig.agent, 0);
  return { rig, serial: await servedSerial(rig.listenerPort) };
}

describe('the SDS server: debug, metrics and bad input', () => {
  describe('an agent serving the default secret to Envoy', { timeout: 60_000 }, () => {
    const cleanup = suiteCleanup();
    let rig: SdsRig;
    let serial: string;
    before(async () => {
      ({ rig, serial } = await startLiveRig(cleanup));
    });

    it('/debug/sds shows what each stream holds, never key material', async () => {
      const body = await get(rig.statusPort, '/debug/sds');
      const held = (JSON.parse(body) as { streams: DebugStream[] }).streams.flatMap((stream) => stream.secrets);
      assert.ok(held.some((secret) => secret.name === 'default' && normal(secret.serial) === serial), body);
      assert.ok(Date.parse(held[0]!.expiresAt) > Date.now());
      assert.doesNotMatch(body, /PRIVATE KEY|BEGIN/, 'no PEM in debug output');
    });

    it('metrics count pushes and the seconds to expiry, never key material', async () => {
      const metrics = await get(rig.statusPort, '/stats/prometheus');
      assert.match(metrics, /^istio_agent_sds_pushes_total\{resource="default"\} [1-9]/m);
      const expiry = Number(/^istio_agent_cert_expiry_seconds\{resource_name="default"\} (\d+)/m.exec(metrics)?.[1]);
      assert.ok(expiry > 3600 && expiry <= 2 * 86400, `seconds to expiry: ${expiry}`);
      assert.doesNotMatch(await get(rig.statusPort, '/stats/prometheus'), /PRIVATE KEY/);
    });
  });

  describe('SDS streams asking for an unknown name, a missing file pair and a non-PEM file', { timeout: 60_000 }, () => {
    const cleanup = suiteCleanup();
    let rig: SdsRig;
    let serial: string;
    let dir: string;
    let fileCert: string;
    let unknown: SdsTestClient;
    let missing: SdsTestClient;
    const clients: SdsTestClient[] = [];
    const client = (names: string[]) => {
      const one = new SdsTestClient(sdsSocket(rig));
      clients.push(one);
      one.subscribe(names);
      return one;
    };

    before(async () => {
      ({ rig, serial } = await startLiveRig(cleanup));
      dir = await tempDir(cleanup, 'sds-files-');
      cleanup.defer(() => clients.forEach((one) => one.close()));
      unknown = client(['kubernetes://nope']);
      fileCert = `file-cert:${dir}/cert.pem~${dir}/key.pem`;
      missing = client([fileCert]);
      await writeFile(join(dir, 'junk.pem'), 'not a certificate\n');
      client([`file-root:${dir}/junk.pem`]);
    });

    it('unknown names and missing or non-PEM files wait with a reason, counted as errors', async () => {
      assert.match(await waitingReason(rig, 'kubernetes://nope'), /unknown resource name/);
      assert.match(await waitingReason(rig, fileCert), /does not exist/);
      assert.match(await waitingReason(rig, `file-root:${dir}/junk.pem`), /not a PEM certificate/);
      assert.equal(unknown.responses.length + missing.responses.length, 0, 'nothing is sent for what cannot be served');
      const metrics = await get(rig.statusPort, '/stats/prometheus');
      assert.match(metrics, /^istio_agent_sds_errors_total\{reason="unknown_resource"\} [1-9]/m);
      assert.match(metrics, /^istio_agent_sds_errors_total\{reason="bad_files"\} [1-9]/m);
    });

    it('a file that appears is served as read', async () => {
      const pair = await rig.ca.issue('localhost');
      await writeFile(join(dir, 'cert.pem'), pair.cert);
      await writeFile(join(dir, 'key.pem'), pair.key);
      const served = await missing.waitFor((response) => response.secrets.some((secret) => secret.serial === pair.serial));
      assert.equal(served.secrets[0]!.key, pair.key, 'the served key is the bytes that were checked');
    });

    it('file-root:system is served as a validation context', async () => {
      const system = client(['file-root:system']);
      assert.equal((await system.waitFor((response) => response.secrets.length > 0)).secrets[0]!.kind, 'validation-context');
    });

    it('Envoy keeps the certificate it was served', async () => {
      assert.equal(await servedSerial(rig.listenerPort), serial, 'Envoy is unaffected');
    });
  });

  describe('an SDS server sent garbage and unimplemented methods', { timeout: 60_000 }, () => {
    const cleanup = suiteCleanup();
    const service = '/envoy.service.secret.v3.SecretDiscoveryService';
    let rig: SdsRig;
    let serial: string;
    let statuses: { badFlag?: string; notProtobuf?: string; delta?: string; fetch?: string };

    before(async () => {
      ({ rig, serial } = await startLiveRig(cleanup));
      await new Promise<void>((resolve) => {
        const raw = connect(sdsSocket(rig), () => raw.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff garbage'));
        raw.on('error', () => resolve()).on('close', () => resolve());
        raw.resume();
      });
      statuses = {
        badFlag: await rawCall(sdsSocket(rig), `${service}/StreamSecrets`, Buffer.from([7, 0, 0, 0, 1, 0])),
        notProtobuf: await rawCall(sdsSocket(rig), `${service}/StreamSecrets`, Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff])),
        delta: await rawCall(sdsSocket(rig), `${service}/DeltaSecrets`, Buffer.alloc(0)),
        fetch: await rawCall(sdsSocket(rig), `${service}/FetchSecrets`, Buffer.alloc(0)),
      };
    });

    it('garbage on the socket and unimplemented methods end that call only, with INVALID_ARGUMENT or UNIMPLEMENTED', () => {
      assert.equal(statuses.badFlag, '3', 'a bad frame flag: INVALID_ARGUMENT');
      assert.equal(statuses.notProtobuf, '3', 'a message that is not protobuf: INVALID_ARGUMENT');
      assert.equal(statuses.delta, '12', 'Delta: UNIMPLEMENTED');
      assert.equal(statuses.fetch, '12', 'Fetch: UNIMPLEMENTED');
    });

    it('the agent lives on: the server still serves and Envoy keeps its first epoch', async () => {
      const client = new SdsTestClient(sdsSocket(rig));
      client.subscribe(['default']);
      assert.equal((await client.waitFor((response) => response.secrets.length > 0)).secrets[0]!.serial, serial, 'the server still serves');
      client.close();
      assert.equal(await servedSerial(rig.listenerPort), serial);
      assert.deepEqual(rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch), [0]);
    });
  });
});
