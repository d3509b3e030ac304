import { wireLen } from './field-scanner.ts';

/**
 * The few protobuf pieces the agent writes and reads by hand (xDS requests,
 * SDS responses, the CA call, the NDS name table, gRPC health): varints and
 * length-delimited fields, over whole messages. Streamed messages (the
 * relay's) are read with field-scanner.ts.
 */

/** One length-delimited field: tag, length, bytes (the encoders of the SDS server, the last-known-good config and the CA call share it). */
export function lenField(number: number, bytes: Buffer | string): Buffer {
  const value = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  return Buffer.concat([encodeVarint(number * 8 + wireLen), encodeVarint(value.length), value]);
}

/** Reads a varint at `from` in a whole message: its value and the offset after it; undefined when truncated. */
export function decodeVarint(bytes: Buffer, from: number): [value: number, next: number] | undefined {
  let value = 0;
  for (let at = from, scale = 1; at < bytes.length && at < from + 10; at++, scale *= 128) {
    value += (bytes[at]! & 0x7f) * scale;
    if (bytes[at]! < 0x80) return [value, at + 1];
  }
  return undefined;
}

/** Encodes a varint (for the node field the relay may add to a request). */
export function encodeVarint(value: number): Buffer {
  // NaN and Infinity never drop below 128: the loop would grow its array until memory runs out.
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`a varint holds a finite number >= 0, not ${value}`);
  const bytes: number[] = [];
  for (let rest = value; ; rest = Math.floor(rest / 128)) {
    if (rest < 128) {
      bytes.push(rest);
      return Buffer.from(bytes);
    }
    bytes.push((rest % 128) | 0x80);
  }
}
