import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { AdsTestClient, sotwRequest } from '../../test/support/ads-client.ts';
import { recipeSetup, type LogCapture } from '../../test/support/envoy-recipe.ts';
import { within } from '../../test/support/within.ts';
import { lenField } from '../grpc/proto-wire.ts';
import { loadLastKnownGoodConfig } from '../xds/last-known-good/file.ts';
import type { RuntimeContext } from './context.ts';
import type { EnvoyRecipeInputs } from './envoy-recipe.ts';
import { startRelayPart, type RelayPart } from './relay.ts';

const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const node = 'sidecar~198.18.0.7~app.ns~ns.svc.cluster.local';
const sotwResponse = (version: string) => Buffer.concat([lenField(1, version), lenField(2, `cluster ${version}`), lenField(4, cds), lenField(5, `n-${version}`)]);

describe('the relay part: the relay, then its last-known-good file', () => {
  let dir: string;
  let ctx: RuntimeContext;
  let inputs: EnvoyRecipeInputs;
  let logs: LogCapture;
  let part: RelayPart | undefined;
  let client: AdsTestClient | undefined;

  beforeEach(async () => {
    ({ dir, ctx, logs, inputs } = await recipeSetup());
  });

  afterEach(async () => {
    client?.close();
    await part?.[Symbol.asyncDispose]();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes what the kept config took while the relay stopped: the file closes after the relay, not before', async () => {
    const socket = join(dir, 'XDS');
    part = await startRelayPart(ctx, { socketPath: socket, upstream: inputs.upstream, node, ca: undefined });
    part.lastKnownGood.keepSotw(cds, 'v1', [sotwResponse('v1')], ctx.clock.now());
    // The discovery server cannot be reached: the stream is served from the kept config and stays open.
    client = new AdsTestClient(`unix:${socket}`, { nodeId: node });
    client.send(sotwRequest({ typeUrl: cds, nodeId: node }));
    assert.equal((await client.waitForResponses(1)).version, 'v1');
    // The latest a stream can take something: as the relay ends it (the last ACK it read).
    const relayed = part;
    void logs.waitFor('xDS stream ended').then(() => relayed.lastKnownGood.keepSotw(cds, 'v2', [sotwResponse('v2')], ctx.clock.now()));
    part = undefined;
    await within(Promise.resolve(relayed[Symbol.asyncDispose]()), 5000, 'the relay part to stop');
    assert.equal(logs.lines.find((line) => line.msg === 'xDS stream ended')?.reason, 'relay_stopped');
    const kept = await loadLastKnownGoodConfig({ configPath: dir, node, clock: ctx.clock, logger: ctx.logger });
    await kept.lastKnownGoodFile.close();
    assert.equal(kept.lastKnownGood.get('sotw', cds)?.version, 'v2', 'the file has what the relay kept up to its stop');
  });
});
