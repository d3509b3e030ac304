import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeldResponse, typePaths } from './held-response.ts';

/** A protobuf length-delimited field: tag, varint length, bytes. */
function lenField(field: number, value: Buffer): Buffer {
  const length: number[] = [];
  for (let rest = value.length; ; rest >>>= 7) {
    if (rest < 0x80) {
      length.push(rest);
      break;
    }
    length.push((rest & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...length]), value]);
}

const wanted = 'type.googleapis.com/istio.networking.nds.v1.NameTable';

test('a response whose type does not show within 64 KiB is forwarded, not held further', () => {
  // version_info (1) first and large: the type_url (4) comes only after it.
  const message = Buffer.concat([lenField(1, Buffer.alloc(200 * 1024, 0x61)), lenField(4, Buffer.from(wanted))]);
  const held = new HeldResponse();
  held.begin(message.length);
  const verdicts: string[] = [];
  for (let at = 0; at < message.length; at += 16 * 1024) {
    held.add(message.subarray(at, Math.min(at + 16 * 1024, message.length)));
    const verdict = held.sniff(typePaths.sotw, wanted, at + 16 * 1024 >= message.length);
    verdicts.push(verdict);
    if (verdict !== 'wait') break;
  }
  assert.deepEqual(verdicts, ['wait', 'wait', 'wait', 'forward'], 'held 16, 32, 48 KiB, then 64 KiB: forwarded');
});

test('a response of the wanted type is captured as soon as its type_url shows; another type is forwarded', () => {
  for (const [typeUrl, expected] of [[wanted, 'capture'], ['type.googleapis.com/envoy.config.cluster.v3.Cluster', 'forward']] as const) {
    const message = Buffer.concat([lenField(4, Buffer.from(typeUrl)), lenField(1, Buffer.alloc(1024))]);
    const held = new HeldResponse();
    held.begin(message.length);
    held.add(message.subarray(0, typeUrl.length + 2));
    assert.equal(held.sniff(typePaths.sotw, wanted, false), expected);
  }
});

test('release() hands back the gRPC prefix and every byte held, and holds nothing after', () => {
  const held = new HeldResponse();
  const prefix = held.begin(6);
  held.add(Buffer.from('abc'));
  held.add(Buffer.from('def'));
  assert.equal(prefix.readUInt32BE(1), 6);
  assert.equal(Buffer.concat(held.release()).toString('latin1'), `${prefix.toString('latin1')}abcdef`);
  assert.deepEqual(held.release(), []);
});
