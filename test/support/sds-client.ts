import { X509Certificate } from 'node:crypto';
import { Client, credentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { sotwRequest } from './ads-client.ts';

export const secretType = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const service = '/envoy.service.secret.v3.SecretDiscoveryService';

/** A secret as the test reads it back from the wire: name, kind and the first certificate's serial. */
export interface ReceivedSecret {
  name: string;
  kind: 'tls-certificate' | 'validation-context' | 'other';
  serial: string;
  /** The private key bytes, when the secret carries one (to check they are the files' bytes). */
  key?: string;
}

export interface SdsResponse {
  version: string;
  nonce: string;
  secrets: ReceivedSecret[];
}

/** Length-delimited fields of one message, in order; varints and fixed fields are stepped over. */
function lenFields(buf: Buffer): Array<[number, Buffer]> {
  const out: Array<[number, Buffer]> = [];
  let pos = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      // Past the end (a truncated answer from the agent) this loop would never see a last byte: fail, do not spin.
      if (pos >= buf.length || shift > 63) throw new Error(`SDS response: malformed varint at byte ${pos} of ${buf.length}`);
      const byte = buf[pos++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (pos < buf.length) {
    const tag = varint();
    const type = tag & 7;
    if (type === 0) varint();
    else if (type === 1) pos += 8;
    else if (type === 5) pos += 4;
    else {
      const length = varint();
      out.push([Math.floor(tag / 8), buf.subarray(pos, pos + length)]);
      pos += length;
    }
  }
  return out;
}

const field = (buf: Buffer, number: number) => lenFields(buf).find(([n]) => n === number)?.[1];
/** DataSource.inline_bytes (2) or inline_string (3). */
const inline = (source: Buffer | undefined) => (source ? (field(source, 2) ?? field(source, 3)) : undefined);

function readSecret(secret: Buffer): ReceivedSecret {
  const name = field(secret, 1)?.toString() ?? '';
  const tls = field(secret, 2);
  const validation = field(secret, 4);
  const pem = tls ? inline(field(tls, 1)) : validation ? inline(field(validation, 1)) : undefined;
  // Normalised as test/support/certs.ts and servedSerial print serials: no leading zeros.
  const serial = pem ? BigInt(`0x${new X509Certificate(pem).serialNumber}`).toString(16).toUpperCase() : '';
  const key = tls ? inline(field(tls, 2))?.toString() : undefined;
  return { name, kind: tls ? 'tls-certificate' : validation ? 'validation-context' : 'other', serial, ...(key ? { key } : {}) };
}

/** Decodes a DiscoveryResponse carrying Secrets. */
export function readSdsResponse(message: Buffer): SdsResponse {
  const all = lenFields(message);
  const text = (n: number) => all.find(([number]) => number === n)?.[1].toString() ?? '';
  const secrets = all.filter(([number]) => number === 2).map(([, any]) => readSecret(field(any, 2) ?? Buffer.alloc(0)));
  return { version: text(1), nonce: text(5), secrets };
}

/** Plays Envoy's part on an SDS socket: subscribes to names, ACKs, records what it is sent. */
export class SdsTestClient {
  readonly responses: SdsResponse[] = [];
  readonly stream: ClientDuplexStream<Buffer, Buffer>;
  readonly ended: Promise<ServiceError | undefined>;
  readonly #client: Client;

  constructor(socketPath: string, method = 'StreamSecrets') {
    this.#client = new Client(`unix:${socketPath}`, credentials.createInsecure());
    const identity = (message: Buffer) => message;
    this.stream = this.#client.makeBidiStreamRequest(`${service}/${method}`, identity, identity);
    this.ended = new Promise((resolve) => {
      this.stream.on('error', (error: ServiceError) => resolve(error));
      this.stream.on('end', () => resolve(undefined));
    });
    this.stream.on('data', (message: Buffer) => {
      const response = readSdsResponse(message);
      this.responses.push(response);
      this.stream.write(sotwRequest({ typeUrl: secretType, version: response.version, nonce: response.nonce, names: this.names }));
    });
  }

  names: string[] = [];

  subscribe(names: string[]): void {
    this.names = names;
    this.stream.write(sotwRequest({ typeUrl: secretType, nodeId: 'sidecar~127.0.0.1~test~local', names }));
  }

  /** Waits for a response that satisfies `predicate`, bounded. */
  async waitFor(predicate: (response: SdsResponse) => boolean, timeoutMs = 10_000): Promise<SdsResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.responses.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching SDS response in ${timeoutMs} ms; got ${JSON.stringify(this.responses)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  close(): void {
    this.stream.cancel();
    this.#client.close();
  }
}
