import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { LogCapture } from '../../../test/support/envoy-recipe.ts';
import { rawAdsCall } from '../../../test/support/scripted-upstream.ts';
import { within } from '../../../test/support/within.ts';
import { Registry } from '../../metrics/index.ts';
import { systemClock } from '../../shared/clock.ts';
import { XdsRelay } from './relay.ts';
import { bindXdsSocket } from './xds-socket.ts';

describe("the relay on Envoy's socket", () => {
  let dir: string;
  let logs: LogCapture;
  let relay: XdsRelay | undefined;
  const closers: (() => void)[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'relay-socket-'));
    logs = new LogCapture();
  });

  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await relay?.stop();
    relay = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  /** The relay on `<dir>/XDS`, its discovery server a port nothing answers on; `held`: the socket bound ahead. */
  async function startRelay(held: boolean) {
    const socketPath = join(dir, 'XDS');
    const socket = held ? await bindXdsSocket({ path: socketPath, mode: 0o600, maxConnections: 4 }) : undefined;
    const logger = pino({ level: 'info' }, logs);
    const upstream = { address: { host: '127.0.0.1', port: 9 }, policy: 'NONE' as const, certDir: dir };
    relay = new XdsRelay({ socketPath, socket, upstream, registry: new Registry(), clock: systemClock, logger });
    return socketPath;
  }

  for (const held of [false, true]) {
    it(`serves each ADS call on the socket as its own numbered stream, and says where it listens (${held ? 'socket bound ahead' : 'bound at start'})`, async () => {
      const socketPath = await startRelay(held);
      await relay!.start();
      const listening = await within(logs.waitFor('xDS relay listening'), 5000, 'the listening line');
      assert.deepEqual([listening.socket, listening.upstream], [socketPath, '127.0.0.1:9']);
      for (let call = 0; call < 2; call++) {
        const { session } = rawAdsCall(socketPath);
        closers.push(() => session.destroy());
        const opened = await within(logs.waitFor('Envoy opened an xDS stream', call + 1), 5000, `stream ${call}`);
        assert.deepEqual([opened.stream, opened.mode], [call + 1, 'sotw']);
      }
      const ended = await within(logs.waitFor('xDS stream ended', 2), 5000, 'both streams ended (nothing answers upstream)');
      assert.equal(ended.stream, 2, 'the stream is named by its number to its end');
    });
  }
});
