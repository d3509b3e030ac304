// A raw-bytes ADS server in its own process for bench/xds-relay.ts, so
// neither the direct nor the relayed client shares an event loop with it.
// Told over IPC what to push and to which client; answers with ms to ACK.
// argv: [bind address, default 127.0.0.1]
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { getEachMessage, sendMessage } from 'execa';
import { FieldScanner } from '../src/grpc/field-scanner.ts';
import { adsMethods } from '../src/xds/relay/relay.ts';
import { readRequest } from '../src/discovery/wire.ts';
import { resourceBlock, responseBytes, type PlaneCommand } from './xds-plane.ts';

type Stream = ServerDuplexStream<Buffer, Buffer>;

/** Streams by the node id their first request carried. */
const streams = new Map<string, Stream>();
const waiting = new Map<string, (ms: number) => void>();
const blocks = new Map<number, Buffer>();
let nonce = 0;

function serve(stream: Stream): void {
  stream.on('error', () => undefined);
  stream.on('data', (request: Buffer) => {
    const fields = readRequest(request, 'sotw');
    if (fields.nonce === '') {
      const client = readNodeId(fields.node);
      streams.set(client, stream);
      void sendMessage({ connected: client });
    }
    waiting.get(fields.nonce)?.(performance.now());
  });
}

/** Node.id is field 1 of the Node message. */
function readNodeId(node: Buffer | undefined): string {
  let id = '';
  const scanner = new FieldScanner(
    { field: (field, wireType) => field === 1 && wireType === 2, value: (_field, bytes) => (id = bytes.toString()) },
    node?.length ?? 0,
  );
  if (node) scanner.push(node);
  return id;
}

function push(client: string, bytes: number, waitForAck: boolean): Promise<number> {
  const block = blocks.get(bytes) ?? blocks.set(bytes, resourceBlock(bytes)).get(bytes)!;
  const id = String(++nonce);
  const start = performance.now();
  return new Promise((resolve) => {
    if (waitForAck) waiting.set(id, (end) => (waiting.delete(id), resolve(end - start)));
    streams.get(client)!.write(responseBytes(block, id));
    if (!waitForAck) resolve(0);
  });
}

const server = new Server({ 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 });
const identity = (message: Buffer) => message;
const method = {
  path: adsMethods.sotw,
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
};
server.addService({ StreamAggregatedResources: method }, { StreamAggregatedResources: serve });
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync(`${process.argv[2] ?? '127.0.0.1'}:0`, ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
);
await sendMessage({ port });
for await (const message of getEachMessage()) {
  const command = message as PlaneCommand;
  if (command.stop) break;
  await sendMessage({ ms: await push(command.client, command.bytes, command.waitForAck) });
}
server.forceShutdown();
