import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { assertGone } from '../support/agent.ts';
import { SdsTestClient } from '../support/sds-client.ts';
import { epochLive, waitForSerial } from '../support/tls-rig.ts';
import { startSdsRig } from '../support/sds-rig.ts';

/** Serials as the certificate prints them, without leading zeros, for comparison. */
const normal = (serial: string) => BigInt(`0x${serial}`).toString(16).toUpperCase();

it('a grpc-js SDS client beside Envoy sees every rotation of `default`, in order, on one stream', { timeout: 90_000 }, async () => {
  const rig = await startSdsRig();
  let client: SdsTestClient | undefined;
  try {
    await epochLive(rig.agent, 0);
    // Made once the socket is there: a grpc-js call does not wait for it.
    client = new SdsTestClient(join(rig.agent.dir, 'sds.sock'));
    client.subscribe(['default']);
    await client.waitFor((response) => response.secrets.length > 0);
    const rotated: string[] = [];
    for (let i = 0; i < 5; i++) {
      const pair = await rig.rotate();
      rotated.push(normal(pair.serial));
      await client.waitFor((response) => response.secrets.some((secret) => normal(secret.serial) === rotated.at(-1)!), 15_000);
    }
    await waitForSerial(rig.listenerPort, rotated.at(-1)!);
    const seen = client.responses.map((response) => normal(response.secrets[0]!.serial));
    assert.deepEqual(seen.filter((serial) => rotated.includes(serial)), rotated, `every rotation once, in order: ${seen.join(' ')}`);
    assert.equal(await Promise.race([client.ended, Promise.resolve('open')]), 'open', 'the stream is still open');
  } finally {
    client?.close();
    await rig.close();
    await assertGone(rig.agent.envoyPids());
  }
});
