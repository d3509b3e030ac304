import { Client, credentials, type ChannelCredentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { adsMethods } from '../../src/xds/relay/relay.ts';
import { encodeVarint } from '../../src/grpc/proto-wire.ts';
import { readResponse, type ResponseFields } from '../../src/discovery/wire.ts';

const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};

/** A SotW DiscoveryRequest in wire form (field numbers from discovery.proto). */
export function sotwRequest(options: { typeUrl: string; nodeId?: string; version?: string; nonce?: string; names?: string[]; error?: string }): Buffer {
  const parts = [
    len(1, options.version ?? ''),
    ...(options.nodeId ? [len(2, len(1, options.nodeId))] : []),
    ...(options.names ?? []).map((name) => len(3, name)),
    len(4, options.typeUrl),
    len(5, options.nonce ?? ''),
    ...(options.error !== undefined ? [len(6, Buffer.concat([encodeVarint(8), encodeVarint(3), len(2, options.error)]))] : []),
  ];
  return Buffer.concat(parts);
}

export interface AdsResponse extends ResponseFields {
  bytes: number;
  at: number;
}

/**
 * A bare SotW ADS client (grpc-js, raw bytes) that plays Envoy's part:
 * subscribes, and ACKs every response unless told not to.
 */
export class AdsTestClient {
  readonly responses: AdsResponse[] = [];
  readonly stream: ClientDuplexStream<Buffer, Buffer>;
  readonly ended: Promise<ServiceError | undefined>;
  readonly #client: Client;
  #waiters: (() => void)[] = [];
  autoAck = true;

  constructor(target: string, options: { credentials?: ChannelCredentials; nodeId?: string } = {}) {
    this.#client = new Client(target, options.credentials ?? credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc-node.flow_control_window': 16 * 1024 * 1024,
    });
    const identity = (message: Buffer) => message;
    this.stream = this.#client.makeBidiStreamRequest(adsMethods.sotw, identity, identity);
    this.ended = new Promise((resolve) => {
      this.stream.on('error', (error: ServiceError) => resolve(error));
      this.stream.on('end', () => resolve(undefined));
    });
    this.stream.on('data', (message: Buffer) => this.#onResponse(message));
  }

  #onResponse(message: Buffer): void {
    const fields = readResponse(message, 'sotw');
    this.responses.push({ ...fields, bytes: message.length, at: performance.now() });
    if (this.autoAck) this.send(sotwRequest({ typeUrl: fields.typeUrl, version: fields.version, nonce: fields.nonce }));
    for (const wake of this.#waiters.splice(0)) wake();
  }

  send(request: Buffer): void {
    this.stream.write(request);
  }

  /** Waits for the n-th response (1-based), bounded. */
  async waitForResponses(count: number, timeoutMs = 15_000): Promise<AdsResponse> {
    const deadline = Date.now() + timeoutMs;
    while (this.responses.length < count) {
      if (Date.now() > deadline) throw new Error(`got ${this.responses.length} of ${count} responses in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.#waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
    return this.responses[count - 1]!;
  }

  close(): void {
    this.stream.cancel();
    this.#client.close();
  }
}
