import { FieldScanner, wireLen } from '../../grpc/field-scanner.ts';
import { lenField } from '../../grpc/proto-wire.ts';

/**
 * The few encodings the relay needs to answer Envoy by itself from the last-known-good
 * responses. Field numbers from envoy/service/discovery/v3/discovery.proto.
 */
const response = { version: 1, resources: 2, type: 4, nonce: 5, removed: 6 } as const;
const resource = { version: 1, name: 3 } as const;

/**
 * The same response with another nonce. Protobuf keeps the last occurrence
 * of a scalar field, so appending the nonce replaces the one the server set
 * without copying the resources apart.
 */
export function withNonce(chunks: readonly Buffer[], nonce: string): Buffer {
  return Buffer.concat([...chunks, lenField(response.nonce, nonce)]);
}

/** A Delta resource as kept: its name, version and the Resource message bytes. */
export interface LastKnownGoodResource {
  name: string;
  version: string;
  bytes: Buffer;
}

/** The resources and removals of a whole DeltaDiscoveryResponse; throws WireError when malformed. */
export function readDeltaChanges(message: Buffer): { resources: LastKnownGoodResource[]; removed: string[] } {
  const resources: LastKnownGoodResource[] = [];
  const removed: string[] = [];
  scanAll(message, (number) => number === response.resources || number === response.removed, (number, bytes) => {
    if (number === response.removed) removed.push(bytes.toString('utf8'));
    else resources.push(readResource(bytes));
  });
  return { resources, removed };
}

function readResource(bytes: Buffer): LastKnownGoodResource {
  // A copy: a kept resource must not pin the whole response it came in.
  const entry: LastKnownGoodResource = { name: '', version: '', bytes: Buffer.from(bytes) };
  scanAll(bytes, (number) => number === resource.name || number === resource.version, (number, value) => {
    if (number === resource.name) entry.name = value.toString('utf8');
    else entry.version = value.toString('utf8');
  });
  return entry;
}

function scanAll(message: Buffer, wanted: (number: number) => boolean, value: (number: number, bytes: Buffer) => void): void {
  const scanner = new FieldScanner({ field: (number, wireType) => wireType === wireLen && wanted(number), value }, message.length, Infinity);
  scanner.push(message);
  scanner.finish();
}

/** A DeltaDiscoveryResponse carrying kept resources. */
export function deltaResponse(options: { typeUrl: string; version: string; nonce: string; resources: Buffer[] }): Buffer {
  return Buffer.concat([
    lenField(response.version, options.version),
    ...options.resources.map((bytes) => lenField(response.resources, bytes)),
    lenField(response.type, options.typeUrl),
    lenField(response.nonce, options.nonce),
  ]);
}
