/**
 * Reads the few fields the relay needs straight from protobuf wire bytes, so
 * a 50 MB response is scanned (lengths skipped), never decoded or copied.
 * Field numbers from envoy/service/discovery/v3/discovery.proto.
 */
export type XdsMode = 'sotw' | 'delta';

/** A frame that is not a well-formed protobuf message. */
export class WireError extends Error {
  override name = 'WireError';
}

export interface RequestFields {
  typeUrl: string;
  /** SotW only: the version Envoy acknowledges (or last accepted, for a NACK). */
  versionInfo: string;
  nonce: string;
  /** Set when Envoy rejected the response (a NACK): error_detail.message. */
  error: string | undefined;
  /** SotW resource_names, or Delta resource_names_subscribe. */
  names: string[];
  /** The Node message's bytes, when this request carries one. */
  node: Buffer | undefined;
}

export interface ResponseFields {
  typeUrl: string;
  /** version_info (SotW) or system_version_info (Delta). */
  version: string;
  nonce: string;
  resources: number;
  /** Delta only: removed_resources. */
  removed: number;
}

const wireVarint = 0;
const wireFixed64 = 1;
const wireLen = 2;
const wireFixed32 = 5;

const requestNumbers = {
  sotw: { version: 1, node: 2, names: 3, type: 4, nonce: 5, error: 6 },
  delta: { version: 0, node: 1, names: 3, type: 2, nonce: 6, error: 7 },
} as const;

// Both response messages share numbers: version 1, resources 2, type 4, nonce 5; Delta adds removed 6.
const response = { version: 1, resources: 2, type: 4, nonce: 5, removed: 6 } as const;
const statusMessage = 2;

/** Calls `visit` for each top-level field; length-delimited values as [start, end). */
export function scanFields(buf: Uint8Array, visit: (field: number, wireType: number, start: number, end: number) => void): void {
  let pos = 0;
  while (pos < buf.length) {
    const [tag, afterTag] = readVarint(buf, pos);
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0) throw new WireError(`field number 0 at byte ${pos}`);
    const [start, end] = valueBounds(buf, wireType, afterTag);
    visit(field, wireType, start, end);
    pos = end;
  }
}

function valueBounds(buf: Uint8Array, wireType: number, pos: number): [number, number] {
  switch (wireType) {
    case wireVarint:
      return [pos, readVarint(buf, pos)[1]];
    case wireFixed64:
      return checked(buf, pos, pos + 8);
    case wireFixed32:
      return checked(buf, pos, pos + 4);
    case wireLen: {
      const [length, start] = readVarint(buf, pos);
      return checked(buf, start, start + length);
    }
    default:
      throw new WireError(`unsupported wire type ${wireType} at byte ${pos}`);
  }
}

function checked(buf: Uint8Array, start: number, end: number): [number, number] {
  if (end > buf.length) throw new WireError(`field runs past the end (${end} > ${buf.length})`);
  return [start, end];
}

/** A base-128 varint up to 2^53; returns the value and the position after it. */
export function readVarint(buf: Uint8Array, pos: number): [number, number] {
  let value = 0;
  for (let shift = 0, i = pos; shift < 64; shift += 7, i++) {
    if (i >= buf.length) throw new WireError(`truncated varint at byte ${pos}`);
    const byte = buf[i]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, i + 1];
  }
  throw new WireError(`varint longer than 10 bytes at byte ${pos}`);
}

/** Encodes a varint (for the node field the relay may add to a request). */
export function encodeVarint(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; ; rest = Math.floor(rest / 128)) {
    if (rest < 128) {
      bytes.push(rest);
      return Buffer.from(bytes);
    }
    bytes.push((rest % 128) | 0x80);
  }
}

const text = (buf: Uint8Array, start: number, end: number) => Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString('utf8');

function expectLen(wireType: number, field: number): void {
  if (wireType !== wireLen) throw new WireError(`field ${field} has wire type ${wireType}, expected length-delimited`);
}

/** The ACK/NACK-relevant fields of a DiscoveryRequest or DeltaDiscoveryRequest. */
export function readRequest(buf: Buffer, mode: XdsMode): RequestFields {
  const numbers = requestNumbers[mode];
  const fields: RequestFields = { typeUrl: '', versionInfo: '', nonce: '', error: undefined, names: [], node: undefined };
  scanFields(buf, (field, wireType, start, end) => {
    if (field !== numbers.version && field !== numbers.node && field !== numbers.names && field !== numbers.type && field !== numbers.nonce && field !== numbers.error) return;
    expectLen(wireType, field);
    if (field === numbers.version) fields.versionInfo = text(buf, start, end);
    else if (field === numbers.type) fields.typeUrl = text(buf, start, end);
    else if (field === numbers.nonce) fields.nonce = text(buf, start, end);
    else if (field === numbers.names) fields.names.push(text(buf, start, end));
    else if (field === numbers.node) fields.node = buf.subarray(start, end);
    else fields.error = readStatusMessage(buf.subarray(start, end));
  });
  return fields;
}

/** google.rpc.Status.message; an error_detail without one still marks a NACK. */
function readStatusMessage(buf: Buffer): string {
  let message = '';
  scanFields(buf, (field, wireType, start, end) => {
    if (field === statusMessage && wireType === wireLen) message = text(buf, start, end);
  });
  return message;
}

/** The fields of a DiscoveryResponse or DeltaDiscoveryResponse the agent records. */
export function readResponse(buf: Buffer, mode: XdsMode): ResponseFields {
  const fields: ResponseFields = { typeUrl: '', version: '', nonce: '', resources: 0, removed: 0 };
  scanFields(buf, (field, wireType, start, end) => {
    if (field === response.resources) fields.resources++;
    else if (field === response.removed && mode === 'delta') fields.removed++;
    else if (field !== response.version && field !== response.type && field !== response.nonce) return;
    expectLen(wireType, field);
    if (field === response.version) fields.version = text(buf, start, end);
    else if (field === response.type) fields.typeUrl = text(buf, start, end);
    else if (field === response.nonce) fields.nonce = text(buf, start, end);
  });
  return fields;
}

/**
 * Appends a node field to a request that lacks one. Protobuf merges repeated
 * occurrences of a message field, so appending is a valid encoding.
 */
export function withNode(request: Buffer, node: Buffer, mode: XdsMode): Buffer {
  const tag = encodeVarint(requestNumbers[mode].node * 8 + wireLen);
  return Buffer.concat([request, tag, encodeVarint(node.length), node]);
}
