import { createSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import type { Clock } from '../shared/clock.ts';
import type { Protocol } from './answer.ts';
import { answersQuery } from './answer-match.ts';

export interface ForwarderOptions {
  servers: readonly string[];
  /** DNS_FORWARD_TIMEOUT: how long one resolver may take. */
  timeoutMs: number;
  /** DNS_FORWARD_PARALLEL: ask every resolver at once and take the first answer. */
  parallel: boolean;
  port?: number;
  clock: Clock;
  /** Queries forwarded at once; past it, SERVFAIL at once (default 1024). */
  maxInFlight?: number;
}

/**
 * Each forwarded query holds a socket until answered or timed out: a flood of
 * unknown names at a resolver that does not answer would otherwise open
 * sockets until the process runs out of descriptors (CoreDNS's forward
 * plugin caps this the same way, with max_concurrent).
 */
const defaultMaxInFlight = 1024;

/** How a forwarded query ended: the resolver's bytes, or why there are none. */
export type Forwarded = { ok: true; response: Buffer; server: string } | { ok: false; reason: string };

/**
 * Sends a query the table cannot answer to the resolvers of resolv.conf, as
 * the client sent it (same id, same bytes) and over the same protocol, and
 * returns the first answer as is. One socket per query, as Go's DNS client
 * does: ids of different clients never meet on one socket. Sequential
 * mode tries the resolvers in turn, each within the timeout.
 */
export class Forwarder {
  readonly #options: ForwarderOptions;
  #next = 0;
  #inFlight = 0;

  constructor(options: ForwarderOptions) {
    this.#options = options;
  }

  async forward(query: Buffer, protocol: Protocol): Promise<Forwarded> {
    const limit = this.#options.maxInFlight ?? defaultMaxInFlight;
    if (this.#inFlight >= limit) return { ok: false, reason: `${limit} queries already forwarded and waiting` };
    this.#inFlight++;
    try {
      return await this.#forward(query, protocol);
    } finally {
      this.#inFlight--;
    }
  }

  async #forward(query: Buffer, protocol: Protocol): Promise<Forwarded> {
    const { servers, parallel } = this.#options;
    if (servers.length === 0) return { ok: false, reason: 'no nameserver in resolv.conf' };
    if (parallel) return this.#parallel(query, protocol);
    // Start at a different resolver each time, so one that is down costs only some queries a timeout.
    const start = this.#next++ % servers.length;
    const order = [...servers.slice(start), ...servers.slice(0, start)];
    const reasons: string[] = [];
    for (const server of order) {
      const outcome = await this.#exchange(query, protocol, server);
      if (outcome.ok) return outcome;
      reasons.push(outcome.reason);
    }
    return { ok: false, reason: reasons.join('; ') };
  }

  /** Every resolver at once; the first answer wins and the other exchanges are closed. */
  async #parallel(query: Buffer, protocol: Protocol): Promise<Forwarded> {
    const losers = new AbortController();
    const attempts = this.#options.servers.map((server) =>
      this.#exchange(query, protocol, server, losers.signal).then((outcome) => (outcome.ok ? outcome : Promise.reject(new Error(outcome.reason)))),
    );
    try {
      return await Promise.any(attempts);
    } catch (error) {
      return { ok: false, reason: (error as AggregateError).errors.map((each: Error) => each.message).join('; ') };
    } finally {
      losers.abort();
    }
  }

  #exchange(query: Buffer, protocol: Protocol, server: string, signal?: AbortSignal): Promise<Forwarded> {
    const exchange = { query, server, port: this.#options.port ?? 53, timeoutMs: this.#options.timeoutMs, clock: this.#options.clock, signal };
    return protocol === 'udp' ? exchangeUdp(exchange) : exchangeTcp(exchange);
  }
}

interface Exchange {
  query: Buffer;
  server: string;
  port: number;
  timeoutMs: number;
  clock: Clock;
  /** Aborted: the exchange is no longer wanted (another resolver answered). */
  signal?: AbortSignal;
}

const label = (server: string, port: number) => (isIPv6(server) ? `[${server}]:${port}` : `${server}:${port}`);

/**
 * The one outcome of an exchange: the first of the answer, an error, the
 * timeout or a cancel; `close` then frees the socket. Shared by UDP and TCP.
 */
function settleOnce(exchange: Exchange, close: () => void, resolve: (outcome: Forwarded) => void) {
  const where = label(exchange.server, exchange.port);
  let settled = false;
  const done = (outcome: Forwarded) => {
    if (settled) return;
    settled = true;
    timer.cancel();
    exchange.signal?.removeEventListener('abort', cancel);
    close();
    resolve(outcome);
  };
  const fail = (reason: string) => done({ ok: false, reason: `${where}: ${reason}` });
  const cancel = () => fail('cancelled');
  exchange.signal?.addEventListener('abort', cancel, { once: true });
  const timer = exchange.clock.setTimeout(() => fail(`no answer within ${exchange.timeoutMs} ms`), exchange.timeoutMs);
  return { done, fail };
}

function exchangeUdp(exchange: Exchange): Promise<Forwarded> {
  const { query, server, port } = exchange;
  return new Promise((resolve) => {
    const socket = createSocket(isIPv6(server) ? 'udp6' : 'udp4');
    const { done, fail } = settleOnce(exchange, () => socket.close(), resolve);
    socket.on('error', (error) => fail(error.message));
    // Only the resolver asked (address and port) answering this id and question counts; anything else is ignored, as spoofed.
    socket.on('message', (message, from) => {
      if (from.address === server && from.port === port && answersQuery(query, message)) done({ ok: true, response: message, server });
    });
    socket.send(query, port, server);
  });
}

function exchangeTcp(exchange: Exchange): Promise<Forwarded> {
  const { query, server, port } = exchange;
  return new Promise((resolve) => {
    const socket = connect({ host: server, port });
    let received = Buffer.alloc(0);
    const { done, fail } = settleOnce(exchange, () => socket.destroy(), resolve);
    socket.on('error', (error) => fail(error.message));
    socket.on('close', () => fail('closed before answering'));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
      const response = received.subarray(2, 2 + received.readUInt16BE(0));
      // One query per connection: the first message must answer it.
      if (answersQuery(query, response)) done({ ok: true, response, server });
      else fail('answered another id or question');
    });
    const length = Buffer.alloc(2);
    length.writeUInt16BE(query.length);
    socket.write(Buffer.concat([length, query]));
  });
}
