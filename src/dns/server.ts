import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv6, type Server } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Clock } from '../shared/clock.ts';
import { ConnectionCap, shedLog } from '../shared/connection-cap.ts';
import type { Logger } from '../shared/log.ts';
import { answerQuery, type Protocol } from './answer.ts';
import type { Forwarder } from './forwarder.ts';
import type { DnsMetrics } from './metrics.ts';
import type { LookupTable } from './lookup-table.ts';
import { serveTcpConnection, tcpConnectionLimits } from './tcp-connection.ts';

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

/**
 * The pod's DNS server: UDP and TCP on DNS_PROXY_ADDR. Every query is
 * answered from the name table or forwarded (`answer.ts` decides); nothing
 * a client sends can throw out of a handler.
 */
export class DnsServer {
  readonly #options: DnsServerOptions;
  readonly #udp: UdpSocket[] = [];
  readonly #tcp: Server[] = [];
  /** Every TCP peer comes over loopback (the pod's own processes, redirected): none is trusted over another. */
  readonly #cap: ConnectionCap;
  #rotation = 0;

  constructor(options: DnsServerOptions) {
    this.#options = options;
    const { maxConnections: max, idleMs } = tcpConnectionLimits;
    const onShed = shedLog((fields, message) => options.logger.warn(fields, message), 'dns tcp');
    this.#cap = new ConnectionCap({ max, reservedForTrusted: 0, idleMs, trusted: () => false, onShed });
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
    const server = createServer((socket) => this.#cap.admit(socket) && serveTcpConnection(socket, (message) => this.#handle(message, 'tcp'), this.#cap));
    this.#cap.attach(server, false);
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

  /** The response to send, or undefined to send nothing; a promise only when forwarded. Never throws or rejects. */
  #handle(message: Buffer, protocol: Protocol): Buffer | undefined | Promise<Buffer | undefined> {
    const { metrics, logger } = this.#options;
    metrics.requests.inc();
    // What a client sends is not the agent's failure: debug, so a hostile client cannot flood the log.
    const failed = (error: unknown) => void logger.debug({ err: error, protocol }, 'DNS query failed');
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
    this.#cap.closeAll();
    await Promise.all([
      ...this.#udp.splice(0).map((socket) => new Promise<void>((resolve) => socket.close(() => resolve()))),
      ...this.#tcp.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    ]);
  }
}

/** SERVFAIL for a query that decoded once already (it was forwarded). */
function serverFailure(message: Buffer): Buffer {
  const query = dnsPacket.decode(message);
  return dnsPacket.encode({ id: query.id ?? 0, type: 'response', flags: ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE | 2, questions: (query.questions ?? []).slice(0, 1) });
}
