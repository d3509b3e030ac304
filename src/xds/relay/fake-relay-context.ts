import pino from 'pino';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from '../last-known-good/config.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import { FakeUpstream } from './fake-upstream.ts';
import type { RelayContext } from './relay-context.ts';
import { XdsStats } from './stats.ts';

/** One log line as pino writes it. */
export type LogLine = { level: number; msg: string; [field: string]: unknown };

/** A logger that keeps its lines (info and up) for the test to read. */
export function recordingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  return { logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) }), lines };
}

/**
 * A RelayContext whose upstream is scripted: each dial takes the next
 * entry of `upstreams` (a FakeUpstream, or an Error to reject with) and
 * records what the stream told the relay.
 */
export function fakeRelayContext(options: { upstreams?: (FakeUpstream | Error)[]; lastKnownGood?: LastKnownGoodConfig; lastDialFailed?: boolean } = {}) {
  const clock = new FakeClock();
  const registry = new Registry();
  const script = options.upstreams ?? [new FakeUpstream()];
  const told = {
    dials: [] as XdsMode[],
    dialed: [] as boolean[],
    spares: [] as UpstreamStream[],
    unimplemented: [] as XdsMode[],
    node: undefined as Buffer | undefined,
  };
  let lastDialFailed = options.lastDialFailed ?? false;
  const context: RelayContext = {
    stats: new XdsStats(registry, clock),
    clock,
    limits: { requestBytes: 1024, responseBytes: 4096, pendingBytes: 1 << 20 },
    lastKnownGood: options.lastKnownGood ?? new LastKnownGoodConfig(),
    backoff: { initialMs: 1_000, multiplier: 2, jitter: 0, maxMs: 4_000 },
    dial: (mode) => {
      told.dials.push(mode);
      const next = script.shift() ?? new Error('no upstream scripted');
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
    keepSpare: (_mode, upstream) => void told.spares.push(upstream),
    dialed: (ok) => void (told.dialed.push(ok), (lastDialFailed = !ok)),
    lastDialFailed: () => lastDialFailed,
    node: { get: () => told.node, set: (node) => void (told.node = node) },
    unimplemented: (mode) => void told.unimplemented.push(mode),
  };
  return { context, clock, registry, told, script };
}
