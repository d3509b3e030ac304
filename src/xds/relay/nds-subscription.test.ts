import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../shared/log.ts';
import { frame } from '../../grpc/grpc-frame.ts';
import { NdsSubscription } from './nds-subscription.ts';
import { nameTableType } from '../../discovery/type-urls.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import { readRequest } from '../../discovery/wire.ts';

const listenerType = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const ndsResponse = (table: Buffer, nonce: string) =>
  frame(
    Buffer.concat([
      lenField(1, 'v9'),
      lenField(2, Buffer.concat([lenField(1, nameTableType), lenField(2, table)])),
      lenField(4, nameTableType),
      lenField(5, nonce),
    ]),
  );

function subscription(accept: (table: Buffer) => string | undefined) {
  const sent: ReturnType<typeof readRequest>[] = [];
  const tables: Buffer[] = [];
  let settled!: () => void;
  const done = new Promise<void>((resolve) => (settled = resolve));
  const nds = new NdsSubscription({
    mode: 'sotw',
    sink: { accept: async (table) => (tables.push(table), accept(table)) },
    send: (request) => {
      sent.push(readRequest(request, 'sotw'));
      if (sent.length > 1) settled();
    },
    forward: () => undefined,
    maxBytes: 1 << 20,
    logger: createLogger({ level: 'fatal' }),
  });
  return { nds, sent, tables, done };
}

describe('NdsSubscription', () => {
  it('subscribes once Envoy asked for listeners, once, and ACKs a table the sink took', async () => {
    const { nds, sent, tables, done } = subscription(() => undefined);
    nds.envoyRequested('type.googleapis.com/envoy.config.cluster.v3.Cluster');
    assert.equal(sent.length, 0, 'not before listeners, as Istio');
    nds.envoyRequested(listenerType);
    nds.envoyRequested(listenerType);
    assert.deepEqual(sent.map((request) => request.typeUrl), [nameTableType]);
    nds.push(ndsResponse(Buffer.from([0x0a, 0x00]), 'n1'));
    await done;
    assert.deepEqual(tables, [Buffer.from([0x0a, 0x00])]);
    assert.deepEqual(
      { type: sent[1]!.typeUrl, version: sent[1]!.versionInfo, nonce: sent[1]!.nonce, error: sent[1]!.error },
      { type: nameTableType, version: 'v9', nonce: 'n1', error: undefined },
    );
  });

  it('NACKs a table the sink refused, with its reason', async () => {
    const { nds, sent, done } = subscription(() => 'NameTable does not parse: truncated tag at byte 0');
    nds.envoyRequested(listenerType);
    nds.push(ndsResponse(Buffer.from([0xff]), 'n2'));
    await done;
    assert.equal(sent[1]!.nonce, 'n2');
    assert.equal(sent[1]!.error, 'NameTable does not parse: truncated tag at byte 0');
  });

  it('a name table the agent never asked for is dropped: not taken, not ACKed', async () => {
    const { nds, sent, tables } = subscription(() => undefined);
    nds.push(ndsResponse(Buffer.from([0x0a, 0x00]), 'n0'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(tables, []);
    assert.deepEqual(sent, []);
  });
});
