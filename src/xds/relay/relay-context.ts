import type { BackoffPolicy, RandomSource } from '../../shared/backoff.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { LastKnownGoodConfig } from '../last-known-good/config.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import type { EcdsConverter, HealthReportSource, NameTableSink } from '../../discovery/consumers.ts';
import type { XdsStats } from './stats.ts';

export interface RelayLimits {
  /** Largest request from Envoy; requests are held whole to read them and maybe add the node. */
  requestBytes: number;
  /** Largest response from the discovery server; responses stream through, never held whole. */
  responseBytes: number;
  /** Most bytes of relayed responses one stream holds until Envoy ACKs them (and the largest kept). */
  pendingBytes: number;
}

/** What every stream of one relay shares: what it reads, what it tells the relay, and how it reaches upstream. */
export interface RelayContext {
  stats: XdsStats;
  clock: Clock;
  limits: RelayLimits;
  /** The last accepted config: fed by ACKs, and what Envoy is served when upstream is down. */
  lastKnownGood: LastKnownGoodConfig;
  /** Redialling while serving from last-known-good config. */
  backoff: BackoffPolicy;
  random?: RandomSource;
  /** With DNS on: the agent subscribes to the name table on each stream and takes its responses. */
  nameTables?: NameTableSink;
  /** With Wasm remote load conversion on: ECDS responses go through it. */
  ecds?: EcdsConverter;
  /** With a readinessProbe in ProxyConfig: the workload's health, reported on each upstream stream. */
  health?: HealthReportSource;
  /** Opens the upstream call for a stream of `mode` (a predial's, a spare, or a new one); may reject. */
  dial(mode: XdsMode, logger: Logger): Promise<UpstreamStream>;
  /** A redial that reached the server: given to the next stream of this mode. */
  keepSpare(mode: XdsMode, upstream: UpstreamStream): void;
  /** Told every dial's outcome: whether the discovery server can be reached. */
  dialed(ok: boolean): void;
  /** True when the last dial (any stream's) failed. */
  lastDialFailed(): boolean;
  /** The node of the last stream that carried one, for a first request without it. */
  node: { get(): Buffer | undefined; set(node: Buffer): void };
  /** Told when the server answers a call of this flavour UNIMPLEMENTED. */
  unimplemented(mode: XdsMode): void;
}
