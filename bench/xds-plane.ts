// What bench/xds-relay.ts and its control-plane child share: the pushed bytes.
import { encodeVarint } from '../src/grpc/proto-wire.ts';

export const typeUrl = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

export interface PlaneCommand {
  client: string;
  bytes: number;
  waitForAck: boolean;
  stop?: boolean;
}

export const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};

/** `total` bytes of ~1 KB Any resources: a big push is many resources, as in a mesh. */
export function resourceBlock(total: number): Buffer {
  const one = len(2, Buffer.concat([len(1, typeUrl), len(2, Buffer.alloc(Math.min(total, 1000) - 70, 0x61))]));
  return Buffer.concat(Array.from({ length: Math.max(1, Math.round(total / one.length)) }, () => one));
}

/** A DiscoveryResponse: version, the resources, type and nonce. */
export const responseBytes = (block: Buffer, nonce: string) => Buffer.concat([len(1, `v${nonce}`), block, len(4, typeUrl), len(5, nonce)]);
