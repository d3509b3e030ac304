import { FieldScanner, WireError, wireLen } from '../../grpc/field-scanner.ts';
import { nameTableType } from '../../discovery/type-urls.ts';
import { encodeAck, encodeSubscribe, type XdsMode } from '../../discovery/wire.ts';

/** Istio's name table type (NDS): the agent asks for it on Envoy's stream and keeps its responses. */

// discovery.proto numbers. Responses (both): version 1, resources 2, type 4, nonce 5. Any: type_url 1, value 2. Delta Resource: version 1, resource 2.

/** What the agent reads of an NDS response: the table's bytes (the first resource), version and nonce. */
export interface NdsResponse {
  version: string;
  nonce: string;
  /** The NameTable message; undefined when the response carries no resource. */
  table: Buffer | undefined;
}

/** The first request for the name table (a wildcard subscription: no names). */
export function ndsSubscribe(mode: XdsMode): Buffer {
  return encodeSubscribe(mode, nameTableType);
}

/** The agent's ACK, or NACK with `error` (INTERNAL, as Istio's agent sends). */
export function ndsAck(mode: XdsMode, answered: { version: string; nonce: string }, error?: string): Buffer {
  return encodeAck(mode, { typeUrl: nameTableType, ...answered }, error);
}

/** Reads a whole NDS response; throws WireError when it is malformed. */
export function readNdsResponse(message: Buffer, mode: XdsMode): NdsResponse {
  const out: NdsResponse = { version: '', nonce: '', table: undefined };
  let resourceVersion = '';
  lenFields(message, (field, bytes) => {
    if (field === 1) out.version = bytes.toString('utf8');
    else if (field === 5) out.nonce = bytes.toString('utf8');
    else if (field === 2 && out.table === undefined) {
      const any = mode === 'sotw' ? bytes : resourceAny(bytes, (version) => (resourceVersion = version));
      out.table = any && anyValue(any);
    }
  });
  // go-control-plane's Delta caches may leave system_version_info empty; the resource's version says it then.
  if (!out.version) out.version = resourceVersion;
  return out;
}

function resourceAny(resource: Buffer, onVersion: (version: string) => void): Buffer | undefined {
  let any: Buffer | undefined;
  lenFields(resource, (field, bytes) => {
    if (field === 1) onVersion(bytes.toString('utf8'));
    else if (field === 2) any = bytes;
  });
  return any;
}

function anyValue(any: Buffer): Buffer {
  let typeUrl = '';
  let value: Buffer = Buffer.alloc(0);
  lenFields(any, (field, bytes) => {
    if (field === 1) typeUrl = bytes.toString('utf8');
    else if (field === 2) value = bytes;
  });
  if (typeUrl !== nameTableType) throw new WireError(`resource is a ${typeUrl || 'resource without a type'}, not a NameTable`);
  return value;
}

function lenFields(message: Buffer, onField: (field: number, bytes: Buffer) => void): void {
  const scanner = new FieldScanner({ field: (_field, wireType) => wireType === wireLen, value: onField }, message.length, Infinity);
  scanner.push(message);
  scanner.finish();
}
