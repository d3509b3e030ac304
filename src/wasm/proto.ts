import { decodeVarint, encodeVarint } from '../grpc/proto-wire.ts';

/**
 * Just enough protobuf to rewrite one field deep inside a message and keep
 * every other byte: a message is a list of fields whose values stay as they
 * came off the wire. Unknown fields, field order and packed values survive a
 * decode/encode round trip unchanged, which a schema-driven library given only
 * the few descriptors we need would not promise.
 */
export interface ProtoField {
  number: number;
  wireType: number;
  /** The value's bytes: varint or fixed bytes as sent, or a length-delimited payload without its length. */
  value: Buffer;
}

export class ProtoError extends Error {}

/** A varint at `from`: its value and the offset after it (grpc/proto-wire.ts reads it; truncation is a ProtoError here). */
const readVarint = (bytes: Buffer, from: number): [value: number, next: number] => {
  const read = decodeVarint(bytes, from);
  if (!read) throw new ProtoError(`truncated varint at byte ${from}`);
  return read;
};

/** The fields of one message, in wire order; throws ProtoError on bytes that are not protobuf. */
export function decodeMessage(bytes: Buffer): ProtoField[] {
  const fields: ProtoField[] = [];
  let at = 0;
  while (at < bytes.length) {
    const [key, valueStart] = readVarint(bytes, at);
    const number = Math.floor(key / 8);
    const wireType = key % 8;
    if (number === 0) throw new ProtoError(`field number 0 at byte ${at}`);
    let start = valueStart;
    let end: number;
    if (wireType === 0) end = readVarint(bytes, start)[1];
    else if (wireType === 1) end = start + 8;
    else if (wireType === 5) end = start + 4;
    else if (wireType === 2) {
      const [length, payload] = readVarint(bytes, start);
      start = payload;
      end = payload + length;
    } else throw new ProtoError(`unsupported wire type ${wireType} at byte ${at}`);
    if (end > bytes.length) throw new ProtoError(`field ${number} runs past the end of the message`);
    fields.push({ number, wireType, value: bytes.subarray(start, end) });
    at = end;
  }
  return fields;
}

export function encodeMessage(fields: readonly ProtoField[]): Buffer {
  const parts: Buffer[] = [];
  for (const field of fields) {
    parts.push(encodeVarint(field.number * 8 + field.wireType));
    if (field.wireType === 2) parts.push(encodeVarint(field.value.length));
    parts.push(field.value);
  }
  return Buffer.concat(parts);
}

/** A length-delimited field (message, string or bytes). */
export const lenField = (number: number, value: Buffer | string): ProtoField => ({ number, wireType: 2, value: Buffer.from(value) });
export const varintField = (number: number, value: number): ProtoField => ({ number, wireType: 0, value: encodeVarint(value) });

/** The last occurrence wins, as protobuf parsers merge singular fields. */
export function lastField(fields: readonly ProtoField[], number: number, wireType = 2): ProtoField | undefined {
  for (let index = fields.length - 1; index >= 0; index--) if (fields[index]!.number === number && fields[index]!.wireType === wireType) return fields[index];
  return undefined;
}

export const bytesOf = (fields: readonly ProtoField[], number: number): Buffer | undefined => lastField(fields, number)?.value;
export const stringOf = (fields: readonly ProtoField[], number: number): string | undefined => bytesOf(fields, number)?.toString('utf8');
export const varintOf = (fields: readonly ProtoField[], number: number): number | undefined => {
  const field = lastField(fields, number, 0);
  return field && readVarint(field.value, 0)[0];
};

/** Replaces every occurrence of `number` by `field` (at the first's place), or drops them when `field` is undefined. */
export function withField(fields: readonly ProtoField[], number: number, field: ProtoField | undefined): ProtoField[] {
  const index = fields.findIndex((candidate) => candidate.number === number);
  const rest = fields.filter((candidate) => candidate.number !== number);
  if (!field) return rest;
  rest.splice(index === -1 ? rest.length : index, 0, field);
  return rest;
}
