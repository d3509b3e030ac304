import { FieldScanner, WireError, wireLen, wireVarint, type FieldSink } from '../grpc/field-scanner.ts';
import { encodeVarint, lenField } from '../grpc/proto-wire.ts';

/**
 * Reads the few fields the relay needs straight from protobuf wire bytes, so
 * a 50 MB response is scanned (lengths skipped), never decoded or copied.
 * protobufjs decodes a whole message, so the relay would first have to
 * gather it, and loading it costs memory of its own (bench/library-cost.ts,
 * docs/benchmarks.md); the scanner streams and costs neither.
 * Field numbers from envoy/service/discovery/v3/discovery.proto.
 */
export type XdsMode = 'sotw' | 'delta';

export interface RequestFields {
  typeUrl: string;
  /** SotW only: the version Envoy acknowledges (or last accepted, for a NACK). */
  versionInfo: string;
  nonce: string;
  /** Set when Envoy rejected the response (a NACK): error_detail.message. */
  error: string | undefined;
  /** SotW resource_names, or Delta resource_names_subscribe. */
  names: string[];
  /** Delta only: resource_names_unsubscribe (a Delta subscription is changed by both lists). */
  unsubscribe: string[];
  /** The Node message's bytes, when this request carries one. */
  node: Buffer | undefined;
  /** Delta only: how many resources Envoy says it already has (initial_resource_versions). */
  initialVersions: number;
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

const requestNumbers = {
  sotw: { version: 1, node: 2, names: 3, type: 4, nonce: 5, error: 6 },
  delta: { version: 0, node: 1, names: 3, type: 2, nonce: 6, error: 7, unsubscribe: 4 },
} as const;

/** google.rpc.Code INTERNAL: the code of the agent's own NACKs, as Istio's agent sends. */
const grpcInternal = 13;

/**
 * The agent's own request on Envoy's stream for a response of `typeUrl`: an
 * ACK, or with `error` a NACK (INTERNAL). `names` are SotW's resource_names
 * (Delta sends none here).
 */
export function encodeAck(mode: XdsMode, answered: { typeUrl: string; version: string; nonce: string; names?: readonly string[] }, error?: string): Buffer {
  const numbers = requestNumbers[mode];
  const parts = mode === 'sotw' ? [lenField(numbers.version, answered.version), ...(answered.names ?? []).map((name) => lenField(numbers.names, name))] : [];
  parts.push(lenField(numbers.type, answered.typeUrl), lenField(numbers.nonce, answered.nonce));
  if (error !== undefined)
    parts.push(lenField(numbers.error, Buffer.concat([encodeVarint(1 * 8 + wireVarint), encodeVarint(grpcInternal), lenField(2, error)])));
  return Buffer.concat(parts);
}

/**
 * Istio's health report on Envoy's stream: a request of `typeUrl` with no
 * resource; unhealthy carries error_detail (INTERNAL and the reason), as Istio's xDS proxy sends it.
 */
export function encodeHealthReport(mode: XdsMode, typeUrl: string, unhealthy?: string): Buffer {
  const numbers = requestNumbers[mode];
  const parts = [lenField(numbers.type, typeUrl)];
  if (unhealthy !== undefined)
    parts.push(lenField(numbers.error, Buffer.concat([encodeVarint(1 * 8 + wireVarint), encodeVarint(grpcInternal), lenField(2, unhealthy)])));
  return Buffer.concat(parts);
}

/** The first request for `typeUrl` on a stream: a wildcard subscription (no names). */
export const encodeSubscribe = (mode: XdsMode, typeUrl: string): Buffer => lenField(requestNumbers[mode].type, typeUrl);

/** Delta requests have no version field: its 0 is no field number. */
const wantedRequestFields = {
  sotw: new Set<number>(Object.values(requestNumbers.sotw)),
  delta: new Set<number>(Object.values(requestNumbers.delta).filter((number) => number > 0)),
};

// Both response messages share numbers: version 1, resources 2, type 4, nonce 5; Delta adds removed 6.
const response = { version: 1, resources: 2, type: 4, nonce: 5, removed: 6 } as const;
const statusMessage = 2;
const deltaInitialVersions = 5;

const text = (bytes: Buffer) => bytes.toString('utf8');

function expectLen(wireType: number, field: number): void {
  if (wireType !== wireLen) throw new WireError(`field ${field} has wire type ${wireType}, expected length-delimited`);
}

/** Scans a whole message held in one buffer. */
function scan(buf: Buffer, sink: FieldSink): void {
  const scanner = new FieldScanner(sink, buf.length, Infinity);
  scanner.push(buf);
  scanner.finish();
}

/** The ACK/NACK-relevant fields of a DiscoveryRequest or DeltaDiscoveryRequest. */
export function readRequest(buf: Buffer, mode: XdsMode): RequestFields {
  const numbers = requestNumbers[mode];
  const wanted = wantedRequestFields[mode];
  const fields: RequestFields = { typeUrl: '', versionInfo: '', nonce: '', error: undefined, names: [], unsubscribe: [], node: undefined, initialVersions: 0 };
  scan(buf, {
    field: (field, wireType) => {
      if (mode === 'delta' && field === deltaInitialVersions) fields.initialVersions++;
      if (!wanted.has(field)) return false;
      expectLen(wireType, field);
      return true;
    },
    value: (field, bytes) => {
      if (field === numbers.version) fields.versionInfo = text(bytes);
      else if (field === numbers.type) fields.typeUrl = text(bytes);
      else if (field === numbers.nonce) fields.nonce = text(bytes);
      else if (field === numbers.names) fields.names.push(text(bytes));
      else if (mode === 'delta' && field === requestNumbers.delta.unsubscribe) fields.unsubscribe.push(text(bytes));
      else if (field === numbers.node) fields.node = bytes;
      else fields.error = readStatusMessage(bytes);
    },
  });
  return fields;
}

/** google.rpc.Status.message; an error_detail without one still marks a NACK. */
function readStatusMessage(buf: Buffer): string {
  let message = '';
  scan(buf, {
    field: (field, wireType) => field === statusMessage && wireType === wireLen,
    value: (_field, bytes) => (message = text(bytes)),
  });
  return message;
}

/**
 * Reads a DiscoveryResponse or DeltaDiscoveryResponse as its bytes stream
 * past: resources are counted, never held. `fields` is complete once the
 * scanner has finished.
 */
export function responseReader(length: number, mode: XdsMode): { scanner: FieldScanner; fields: ResponseFields } {
  const fields: ResponseFields = { typeUrl: '', version: '', nonce: '', resources: 0, removed: 0 };
  const scanner = new FieldScanner({
    field: (field, wireType) => {
      if (field === response.resources) fields.resources++;
      else if (field === response.removed && mode === 'delta') fields.removed++;
      else if (field !== response.version && field !== response.type && field !== response.nonce) return false;
      expectLen(wireType, field);
      return field === response.version || field === response.type || field === response.nonce;
    },
    value: (field, bytes) => {
      if (field === response.version) fields.version = text(bytes);
      else if (field === response.type) fields.typeUrl = text(bytes);
      else fields.nonce = text(bytes);
    },
  }, length);
  return { scanner, fields };
}

/** The fields of a whole response held in one buffer. */
export function readResponse(buf: Buffer, mode: XdsMode): ResponseFields {
  const { scanner, fields } = responseReader(buf.length, mode);
  scanner.push(buf);
  scanner.finish();
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
