import type { ExitKind } from './reconcile-types.ts';

/** How one epoch of the proxy ended. */
export interface ProxyExit {
  kind: ExitKind;
  /** Exit code or signal, and the last error lines Envoy printed. */
  detail: string;
  /** The stop needed SIGKILL: the proxy did not end within its kill delay after SIGTERM. */
  forced?: boolean;
}

export interface LiveDetails {
  envoyVersion?: string;
}

export interface RunOptions {
  /** Aborting stops this epoch (SIGTERM, then SIGKILL). */
  signal: AbortSignal;
  /** Called once when the epoch is LIVE and serving, with the version it reports (Envoy's /server_info). */
  onLive: (details?: LiveDetails) => void;
  /** Called once the process is spawned (status server: pid per epoch). */
  onStarted?: (info: { pid: number }) => void;
}

/** The proxy as the agent sees it: run an epoch, drain, clean up. */
export interface Proxy {
  /** Runs one epoch to its end; never rejects. */
  run(epoch: number, config: string, options: RunOptions): Promise<ProxyExit>;
  /**
   * Tells the epoch that serves now to fail health checks and drain its
   * listeners, without waiting (the agent waits, drain-wait.ts); `skipExit`:
   * for good, Envoy does not exit once drained (POST /drain). Whether Envoy took it.
   */
  drain(options: { signal: AbortSignal; skipExit?: boolean }): Promise<boolean>;
  /** Downstream connections still open on the proxy's listeners; undefined when it cannot tell. */
  activeConnections(signal: AbortSignal): Promise<number | undefined>;
  /** Removes what an exited epoch left behind (its bootstrap file). */
  cleanup(epoch: number): Promise<void>;
}
