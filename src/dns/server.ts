import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv6, type Server, type Socket } from 'node:net';
import type { Counter } from '../metrics/index.ts';
import type { Clock } from '../shared/clock.ts';
import { ConnectionCap, shedLog, type ConnectionCapOptions } from '../shared/connection-cap.ts';
import type { Logger } from '../shared/log.ts';
import { answerQuery, serverFailure, type Protocol } from './answer.ts';
import type { Forwarder } from './forwarder.ts';
import type { DnsMetrics } from './metrics.ts';
import type { LookupTable } from './lookup-table.ts';
import { dnsTcpConnectionLimits, serveTcpConnection, type TcpConnectionLimits } from './tcp-connection.ts';

export interface DnsServerOptions {
  /** Addresses to listen on (UDP and TCP each), and the port. */
  hosts: readonly string[];
  port: number;
  table: () => LookupTable | undefined;
  forwarder: Forwarder;
  /** Forward rather than SERVFAIL before the first table. */
  forwardBeforeTable?: boolean;
  metrics: DnsMetrics;
  /** Queries refused or dropped by reason (formerr, notimp, fault, send): what a hostile client costs, counted. */
  refused?: Counter<'reason'>;
  /** Tests: smaller caps. */
  connectionLimits?: Pick<ConnectionCapOptions, 'max' | 'reservedForTrusted' | 'idleMs'>;
  tcpLimits?: TcpConnectionLimits;
  clock: Clock;
  logger: Logger;
}

/**
 * A TCP connection with no activity (no query read, no answer taken) is
 * closed after this long, as DNS servers do: the idle timeout and the send
 * timeout in one, since a client that stops reading stops all activity.
 */
const tcpIdleMs = 10_000;
/** TCP connections: the pod's resolvers open a few; loopback keeps room when the pod network fills the rest. */
export const dnsConnectionLimits = { max: 128, reservedForTrusted: 32, idleMs: tcpIdleMs } as const;

const loopback = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

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
  readonly #cap: ConnectionCap;
  #rotation = 0;

  constructor(options: DnsServerOptions) {
    this.#options = options;
    const log = (fields: Record<string, unknown>, message: string) => options.logger.warn(fields, message);
    const trusted = (socket: Socket) => loopback.has(socket.remoteAddress ?? '');
    this.#cap = new ConnectionCap({ ...(options.connectionLimits ?? dnsConnectionLimits), trusted, onShed: shedLog(log, 'dns tcp') });
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
    this.#cap.attach(server, false); // #onConnection admits
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port, host, () => (server.off('error', reject), resolve(server)));
    });
  }

  #onDatagram(socket: UdpSocket, message: Buffer, from: RemoteInfo): void {
    const sent = (error: Error | null) => error && this.#fault('send', error);
    const send = (response: Buffer | undefined) => response && socket.send(response, from.port, from.address, sent);
    try {
      const response = this.#handle(message, 'udp');
      if (response instanceof Promise) void response.then(send).catch((error: unknown) => this.#fault('fault', error));
      else send(response);
    } catch (error) {
      this.#fault('fault', error);
    }
  }

  #onConnection(socket: Socket): void {
    if (!this.#cap.admit(socket)) return;
    this.#connections.add(socket);
    socket.setTimeout(tcpIdleMs, () => socket.destroy());
    socket.on('close', () => this.#connections.delete(socket));
    socket.on('error', () => undefined); // 'close' follows
    serveTcpConnection(socket, {
      limits: this.#options.tcpLimits ?? dnsTcpConnectionLimits,
      handle: (message) => this.#handle(message, 'tcp'),
      busy: () => this.#cap.busy(socket),
      idle: () => this.#cap.idle(socket),
      failed: (error) => this.#fault('fault', error),
    });
  }

  /** What a client caused and nothing answered: a debug line and a count, never a warning per packet. */
  #fault(reason: string, error: unknown): void {
    this.#options.refused?.inc({ reason });
    this.#options.logger.debug({ err: error, reason }, 'DNS query dropped');
  }

  /** The response to send, or undefined to send nothing; a promise only when forwarded. Never throws or rejects. */
  #handle(message: Buffer, protocol: Protocol): Buffer | undefined | Promise<Buffer | undefined> {
    this.#options.metrics.requests.inc();
    const failed = (error: unknown) => void this.#fault('fault', error);
    try {
      const verdict = answerQuery(message, {
        table: this.#options.table(),
        protocol,
        rotation: this.#rotate,
        forwardBeforeTable: this.#options.forwardBeforeTable,
      });
      if (verdict.kind === 'drop') return undefined;
      if (verdict.kind === 'answer') {
        if (verdict.rcode === 'FORMERR' || verdict.rcode === 'NOTIMP') this.#options.refused?.inc({ reason: verdict.rcode.toLowerCase() });
        return verdict.response;
      }
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
