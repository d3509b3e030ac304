import { WireError, wireLen } from './field-scanner.ts';

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

/** One top-level field: its number, and for a length-delimited one its value's range; `next` is where the next field starts. */
interface Field {
  field: number;
  len: { start: number; end: number } | undefined;
  next: number;
}

/** Reads the field at `at` of a message ending at `end`; throws WireError when the bytes are not protobuf. */
export function readField(bytes: Buffer, at: number, end: number): Field {
  const tag = decodeVarint(bytes, at);
  if (!tag || tag[1] > end) throw new WireError(`truncated tag at byte ${at}`);
  const [key, afterTag] = tag;
  const field = Math.floor(key / 8);
  const wireType = key % 8;
  if (wireType === wireLen) {
    const length = decodeVarint(bytes, afterTag);
    if (!length || length[1] + length[0] > end) throw new WireError(`field ${field} is truncated: it runs past its message at byte ${at}`);
    return { field, len: { start: length[1], end: length[1] + length[0] }, next: length[1] + length[0] };
  }
  if (wireType === 0) {
    const value = decodeVarint(bytes, afterTag);
    if (!value || value[1] > end) throw new WireError(`truncated varint at byte ${afterTag}`);
    return { field, len: undefined, next: value[1] };
  }
  if (wireType !== 1 && wireType !== 5) throw new WireError(`unsupported wire type ${wireType} at byte ${at}`);
  const next = afterTag + (wireType === 1 ? 8 : 4);
  if (next > end) throw new WireError(`field ${field} runs past its message at byte ${at}`);
  return { field, len: undefined, next };
}

/**
 * Calls `onField` with the range of every length-delimited field of the
 * message in `bytes[start, end)`. A direct loop over the buffer, not the
 * relay's streaming FieldScanner (much slower on a name table).
 */
export function eachLenField(bytes: Buffer, range: { start: number; end: number }, onField: (field: number, start: number, end: number) => void): void {
  for (let at = range.start; at < range.end; ) {
    const { field, len, next } = readField(bytes, at, range.end);
    if (len) onField(field, len.start, len.end);
    at = next;
  }
}
