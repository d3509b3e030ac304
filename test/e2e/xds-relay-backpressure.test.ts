import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerHttp2Stream } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { frame } from '../../src/grpc/grpc-frame.ts';
import { upstreamWindowBytes } from '../../src/xds/upstream/session.ts';
import { sotwRequest } from '../support/ads-client.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { plaintextUpstream, startRelay } from '../support/relay.ts';
import { rawAdsCall, startScriptedUpstream } from '../support/scripted-upstream.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const mib = 1024 * 1024;

/** A SotW Cluster response of about 1 MiB: 8000 resources of 120 bytes, with its own nonce. */
function bigResponse(nonce: string): Buffer {
  const resource = Buffer.concat([Buffer.from([0x12, 120]), Buffer.alloc(120, 0x61)]);
  const resources = Array.from({ length: 8000 }, () => resource);
  return frame(
    Buffer.concat([
      Buffer.from([0x0a, 2]),
      Buffer.from('v1'),
      ...resources,
      Buffer.from([0x22, clusterType.length]),
      Buffer.from(clusterType),
      Buffer.from([0x2a, nonce.length]),
      Buffer.from(nonce),
    ]),
  );
}

/** Writes responses as fast as HTTP/2 takes them, up to `totalBytes`; `accepted` is how far it got. */
function sendFlood(stream: ServerHttp2Stream, totalBytes: number, progress: { accepted: number }): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
  let count = 0;
  const pump = () => {
    while (progress.accepted < totalBytes) {
      const chunk = bigResponse(`n${count++}`);
      progress.accepted += chunk.length;
      if (!stream.write(chunk)) return void stream.once('drain', pump);
    }
  };
  pump();
}

/** Polls `read` until it has not changed for `quietMs`; fails past `timeoutMs`. */
async function waitForPlateau(read: () => number, options: { quietMs: number; timeoutMs: number }): Promise<number> {
  const deadline = Date.now() + options.timeoutMs;
  let last = read();
  let since = Date.now();
  while (Date.now() < deadline) {
    await sleep(100);
    const now = read();
    if (now !== last) [last, since] = [now, Date.now()];
    else if (Date.now() - since >= options.quietMs) return now;
  }
  throw new Error(`still growing after ${options.timeoutMs} ms: ${read()} bytes`);
}

describe('xDS relay back-pressure: an Envoy that stops reading holds the server back', () => {
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'xds-backpressure-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  describe('an Envoy that reads nothing of a 160 MiB flood', { timeout: 120_000 }, () => {
    const cleanup = suiteCleanup();
    const totalBytes = 160 * mib;
    const progress = { accepted: 0 };
    let stream: ReturnType<typeof rawAdsCall>['stream'];
    let held: number;

    before(async () => {
      const upstream = await startScriptedUpstream((stream) => sendFlood(stream, totalBytes, progress));
      cleanup.defer(() => upstream.close());
      const { relay, socketPath } = await startRelay(dir, plaintextUpstream(upstream.port, dir));
      cleanup.defer(() => relay.stop());
      const call = rawAdsCall(socketPath);
      cleanup.defer(() => void call.session.destroy());
      stream = call.stream;
      stream.write(frame(sotwRequest({ typeUrl: clusterType, nodeId: 'slow-envoy' })));
      // Envoy's side reads nothing: no 'data' listener, the stream stays paused.
      held = await waitForPlateau(() => progress.accepted, { quietMs: 1500, timeoutMs: 60_000 });
    });

    it('the relay stops reading upstream, so the server waits on the window instead of the relay queueing', () => {
      // One upstream window (stream and connection, 16 MiB), Envoy's small window, and socket buffers; not the flood.
      assert.ok(
        held < upstreamWindowBytes + 24 * mib,
        `the server got ${(held / mib).toFixed(1)} MiB out while Envoy read nothing (of ${totalBytes / mib} MiB)`,
      );
      assert.ok(held > 0, 'the server did start sending');
    });

    it('once Envoy reads again every byte arrives: the stall held bytes back rather than dropping them', async (t) => {
      let received = 0;
      const all = new Promise<void>((resolve) => stream.on('data', (chunk: Buffer) => (received += chunk.length) >= totalBytes && resolve()));
      stream.resume();
      const bound = new AbortController();
      await Promise.race([
        all,
        sleep(60_000, undefined, { signal: bound.signal }).then(() =>
          assert.fail(`only ${received} of ${progress.accepted} bytes reached Envoy's side after it read again`),
        ),
      ]).finally(() => bound.abort());
      await waitForPlateau(() => received, { quietMs: 300, timeoutMs: 10_000 });
      assert.equal(received, progress.accepted, 'every byte the server sent reached Envoy\'s side');
      t.diagnostic(`held back at ${(held / mib).toFixed(1)} MiB of ${(progress.accepted / mib).toFixed(1)} MiB`);
    });
  });
});
