import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv6, type Server, type Socket } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { answerQuery, type Protocol } from './answer.ts';
import type { Forwarder } from './forwarder.ts';
import type { DnsMetrics } from './metrics.ts';
import type { LookupTable } from './lookup-table.ts';

export interface DnsServerOptions {
  /** Addresses to listen on (UDP and TCP each), and the port. */
  hosts: readonly string[];
  port: number;
  table: () => LookupTable | undefined;
  forwarder: Forwarder;
  /** Forward rather than SERVFAIL before the first table. */
  forwardBeforeTable?: boolean;
  metrics: DnsMetrics;
  clock: Clock;
  logger: Logger;
}

/** An idle TCP connection is closed after this long, as DNS servers do. */
const tcpIdleMs = 10_000;

/**
 * The pod's DNS server: UDP and TCP on DNS_PROXY_ADDR. Every query is
 * answered from the name table or forwarded (`answer.ts` decides); nothing
 * a client sends can throw out of a handler.
 */
export class DnsServer {
  readonly #options: DnsServerOptions;
  readonly #udp: UdpSocket[] = [];
  readonly #tcp: Server[] = [];
  readonly #connections = new Set<Socket>();
  #rotation = 0;

  constructor(options: DnsServerOptions) {
    this.#options = options;
  }

  /** Listens on every address; rejects with the first that fails (nothing is left listening). */
  async start(): Promise<void> {
    try {
      for (const host of this.#options.hosts) {
        this.#udp.push(await this.#listenUdp(host));
        this.#tcp.push(await this.#listenTcp(host));
      }
    } catch (error) {
      await this.stop();
      throw error;
    }
    this.#options.logger.info({ hosts: this.#options.hosts, port: this.#options.port }, 'DNS proxy listening (UDP and TCP)');
  }

  #listenUdp(host: string): Promise<UdpSocket> {
    const socket = createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4' });
    socket.on('message', (message, from) => this.#onDatagram(socket, message, from));
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(this.#options.port, host, () => {
        socket.off('error', reject);
        socket.on('error', (error) => this.#options.logger.warn({ err: error }, 'DNS UDP socket error'));
        resolve(socket);
      });
    });
  }

  #listenTcp(host: string): Promise<Server> {
    const server = createServer((socket) => this.#onConnection(socket));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port, host, () => (server.off('error', reject), resolve(server)));
    });
  }

  #onDatagram(socket: UdpSocket, message: Buffer, from: RemoteInfo): void {
    const send = (response: Buffer | undefined) => response && socket.send(response, from.port, from.address);
    const response = this.#handle(message, 'udp');
    if (response instanceof Promise) void response.then(send);
    else send(response);
  }

  #onConnection(socket: Socket): void {
    this.#connections.add(socket);
    socket.setTimeout(tcpIdleMs, () => socket.destroy());
    socket.on('close', () => this.#connections.delete(socket));
    socket.on('error', () => undefined); // 'close' follows
    let buffered: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      // Whole messages are taken at once, so at most one partial message (64 KiB) is ever held.
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const message = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(2 + message.length);
        void Promise.resolve(this.#handle(message, 'tcp')).then((response) => {
          if (!response) return void socket.destroy();
          if (!socket.writable) return;
          const length = Buffer.alloc(2);
          length.writeUInt16BE(response.length);
          socket.write(Buffer.concat([length, response]));
        });
      }
    });
  }

  /** The response to send, or undefined to send nothing; a promise only when forwarded. Never throws or rejects. */
  #handle(message: Buffer, protocol: Protocol): Buffer | undefined | Promise<Buffer | undefined> {
    const { metrics, logger } = this.#options;
    metrics.requests.inc();
    const failed = (error: unknown) => void logger.warn({ err: error, protocol }, 'DNS query failed');
    try {
      const verdict = answerQuery(message, { table: this.#options.table(), protocol, rotation: this.#rotate, forwardBeforeTable: this.#options.forwardBeforeTable });
      if (verdict.kind === 'drop') return undefined;
      if (verdict.kind === 'answer') return verdict.response;
      return this.#forward(message, protocol, verdict.name).catch(failed);
    } catch (error) {
      return failed(error);
    }
  }

  readonly #rotate = () => this.#rotation++;

  async #forward(message: Buffer, protocol: Protocol, name: string): Promise<Buffer> {
    const { metrics, forwarder, clock, logger } = this.#options;
    metrics.upstreamRequests.inc();
    const started = clock.now();
    const outcome = await forwarder.forward(message, protocol);
    metrics.upstreamDuration.observe({}, (clock.now() - started) / 1000);
    if (outcome.ok) return outcome.response;
    metrics.upstreamFailures.inc();
    logger.debug({ name, protocol, reason: outcome.reason }, 'no resolver answered; SERVFAIL');
    return serverFailure(message);
  }

  /** Stops listening and closes every TCP connection. */
  async stop(): Promise<void> {
    for (const socket of this.#connections) socket.destroy();
    await Promise.all([
      ...this.#udp.splice(0).map((socket) => new Promise<void>((resolve) => socket.close(() => resolve()))),
      ...this.#tcp.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    ]);
  }
}

/** SERVFAIL for a query that decoded once already (it was forwarded). */
function serverFailure(message: Buffer): Buffer {
  const query = dnsPacket.decode(message);
  return dnsPacket.encode({ id: query.id ?? 0, type: 'response', flags: ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE | 2, questions: query.questions ?? [] });
}
