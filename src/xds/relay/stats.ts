import type { Registry } from '../../metrics/index.ts';
import type { Clock } from '../../shared/clock.ts';
import type { UpstreamCredential } from '../upstream/credentials.ts';
import { typeKey } from '../../discovery/type-urls.ts';
import type { RequestFields, ResponseFields, XdsMode } from '../../discovery/wire.ts';
import { endings, type TerminationReason } from './ending.ts';
import { registerRelayMetrics } from './relay-metrics.ts';

/** What the agent knows of one resource type, for the status server's JSON. */
export interface TypeDebug {
  /** Last response relayed to Envoy. */
  version: string;
  nonce: string;
  lastPushAt: string | undefined;
  ack: { version: string; nonce: string; at: string } | undefined;
  nack: { version: string; nonce: string; error: string; at: string } | undefined;
  requests: number;
  responses: number;
  requestBytes: number;
  responseBytes: number;
  nacks: number;
  /** Names of the last request (SotW resource_names, Delta subscribe). */
  names: string[];
}

export interface RelayDebug {
  socket: string;
  upstream: string;
  streams: {
    id: number;
    mode: XdsMode;
    since: string;
    upstream: 'dialing' | 'open' | 'last-known-good';
    credential?: UpstreamCredential;
    lastKnownGoodSince?: string;
  }[];
  /** Set while some Envoy stream is served from the last-known-good config. */
  servingLastKnownGoodSince?: string;
  /** What is kept, per stream kind and type. */
  kept?: unknown;
  types: Record<string, TypeDebug>;
  upstreamFailures: number;
  terminations: Partial<Record<TerminationReason, number>>;
}

/** The metric label of a type key: the message name of a known type URL, or `other`. */
const shortType = (key: string) => key.slice(key.lastIndexOf('/') + 1);

/**
 * The relay's counters, twice: metrics in the registry the
 * status server exposes, and a per-type view for `debug()`. Both are keyed
 * by known type URLs only (others count as `other`), so what Envoy's side
 * sends cannot grow either without bound.
 */
export class XdsStats {
  readonly #clock: Clock;
  readonly #types = new Map<string, TypeDebug>();
  readonly #terminations: Partial<Record<TerminationReason, number>> = {};
  #upstreamFailures = 0;
  readonly #metrics;

  /** `lastKnownGoodSince`: since when the oldest stream still served from last-known-good config is (ms), if any. */
  constructor(registry: Registry, clock: Clock, lastKnownGoodSince: () => number | undefined = () => undefined) {
    this.#clock = clock;
    this.#metrics = registerRelayMetrics(registry, lastKnownGoodSince);
  }

  #type(typeUrl: string): TypeDebug {
    let entry = this.#types.get(typeUrl);
    if (!entry) {
      entry = {
        version: '',
        nonce: '',
        lastPushAt: undefined,
        ack: undefined,
        nack: undefined,
        requests: 0,
        responses: 0,
        requestBytes: 0,
        responseBytes: 0,
        nacks: 0,
        names: [],
      };
      this.#types.set(typeUrl, entry);
    }
    return entry;
  }

  #now(): string {
    return new Date(this.#clock.now()).toISOString();
  }

  /** A request from Envoy; `acked` is the response it answers, if any. */
  request(fields: RequestFields, bytes: number, acked: { version: string; nonce: string } | undefined): void {
    const key = typeKey(fields.typeUrl);
    const type = shortType(key);
    const entry = this.#type(key);
    entry.requests++;
    entry.requestBytes += bytes;
    entry.names = fields.names;
    this.#metrics.requests.inc({ type });
    this.#metrics.bytes.inc({ type, direction: 'request' }, bytes);
    if (!acked) return;
    if (fields.error === undefined) {
      entry.ack = { version: acked.version, nonce: acked.nonce, at: this.#now() };
      return;
    }
    entry.nacks++;
    entry.nack = { version: acked.version, nonce: acked.nonce, error: fields.error, at: this.#now() };
    this.#metrics.nacks.inc({ type });
  }

  /** A response from the discovery server, relayed to Envoy. */
  response(fields: ResponseFields, bytes: number): void {
    const key = typeKey(fields.typeUrl);
    const type = shortType(key);
    const entry = this.#type(key);
    Object.assign(entry, { version: fields.version, nonce: fields.nonce, lastPushAt: this.#now() });
    entry.responses++;
    entry.responseBytes += bytes;
    this.#metrics.responses.inc({ type });
    this.#metrics.bytes.inc({ type, direction: 'response' }, bytes);
  }

  /** A dial of the discovery server: which credential it carried and how it went. */
  upstreamDial(credential: UpstreamCredential, result: 'connected' | 'certificate_refused' | 'failed'): void {
    this.#metrics.dials.inc({ credential, result });
    if (result !== 'connected') this.#metrics.istiodFailures.inc();
  }

  upstreamFailure(code: string): void {
    this.#upstreamFailures++;
    this.#metrics.upstreamFailures.inc({ code });
  }

  /** An upstream stream is open; paired with upstreamClosed when its relay stream ends. */
  upstreamOpened(): void {
    this.#metrics.upstreams.inc();
  }

  upstreamClosed(): void {
    this.#metrics.upstreams.dec();
  }

  lastKnownGoodStreamOpened(): void {
    this.#metrics.lastKnownGoodStreams.inc();
  }

  lastKnownGoodStreamClosed(): void {
    this.#metrics.lastKnownGoodStreams.dec();
  }

  lastKnownGoodResponse(typeUrl: string, bytes: number): void {
    const type = shortType(typeUrl);
    this.#metrics.lastKnownGoodResponses.inc({ type });
    this.#metrics.bytes.inc({ type, direction: 'last_known_good' }, bytes);
  }

  lastKnownGoodNack(typeUrl: string): void {
    this.#metrics.lastKnownGoodNacks.inc({ type: shortType(typeUrl) });
  }

  streamOpened(): void {
    this.#metrics.streams.inc();
  }

  streamEnded(reason: TerminationReason): void {
    this.#terminations[reason] = (this.#terminations[reason] ?? 0) + 1;
    this.#metrics.terminations.inc({ reason });
    const istio = endings[reason].istio;
    if (istio) this.#metrics[`${istio.side}Terminations`].inc({ type: istio.type });
    this.#metrics.streams.dec();
  }

  /** The per-type and per-connection figures as plain JSON. */
  snapshot(): Pick<RelayDebug, 'types' | 'upstreamFailures' | 'terminations'> {
    return {
      types: Object.fromEntries([...this.#types].map(([typeUrl, entry]) => [typeUrl, structuredClone(entry)])),
      upstreamFailures: this.#upstreamFailures,
      terminations: { ...this.#terminations },
    };
  }
}
