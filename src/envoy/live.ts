import type { LiveDetails } from '../agent/proxy.ts';
import type { Clock } from '../shared/clock.ts';
import { isLive, serverInfo, type AdminClient, type ServerInfo } from './admin.ts';

/** How often admin is polled until the epoch is LIVE. */
export const livePollMs = 100;

/** Envoy's own default fetch timeouts (15 s for CDS, 15 s for LDS), which this bootstrap does without: past them, say so once. */
export const waitingNoticeMs = 30_000;

/**
 * Whether what answered on admin is this epoch's own Envoy, LIVE. During a
 * hot restart both epochs share the admin port, and another agent's Envoy
 * may hold it: only the config path proves whose it is, as no other epoch
 * nor agent runs this epoch's bootstrap file.
 */
export function isThisEpochLive(info: ServerInfo | undefined, bootstrapPath: string): boolean {
  return info?.state === 'LIVE' && info.configPath === bootstrapPath;
}

export interface WatchLiveOptions {
  admin: AdminClient;
  clock: Clock;
  bootstrapPath: string;
  signal: AbortSignal;
  onLive: (details: LiveDetails) => void;
  /** Told once when the epoch is still not LIVE after `waitingNoticeMs` (it waits for its config). */
  onWaiting?: (waitedMs: number) => void;
}

/**
 * Polls admin until this epoch's own Envoy reports LIVE, then tells
 * `onLive` once. The poll asks `/ready` (5 bytes) and only once it says
 * LIVE `/server_info` (large, and several times the CPU of /ready on both
 * sides, docs/benchmarks.md): a node of pods starting together is
 * CPU-bound, and this runs every 100 ms until LIVE.
 */
export async function watchLive({ admin, clock, bootstrapPath, signal, onLive, onWaiting }: WatchLiveOptions): Promise<void> {
  const since = clock.now();
  let told = false;
  while (!signal.aborted) {
    if (!told && clock.now() - since >= waitingNoticeMs) {
      told = true;
      onWaiting?.(clock.now() - since);
    }
    const live = await isLive(admin, signal);
    const info = live ? await serverInfo(admin, signal) : undefined;
    if (isThisEpochLive(info, bootstrapPath)) {
      if (!signal.aborted) onLive({ envoyVersion: info!.version });
      return;
    }
    await clock.sleep(livePollMs, signal).catch(() => undefined);
  }
}
