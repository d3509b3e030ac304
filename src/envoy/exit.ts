import type { ProxyExit } from '../agent/proxy.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { RecentErrors } from './output.ts';

export interface ChildResult {
  exitCode?: number;
  signal?: string;
  isCanceled: boolean;
  failed: boolean;
  code?: string;
  /** execa's flag: it sent SIGKILL because SIGTERM went unanswered past `forceKillAfterDelay`. */
  isForcefullyTerminated?: boolean;
}

const parentInitializing = 'previous envoy process is still initializing';
const cannotBind = /cannot bind '(.*):(\d+)': (.*)/;

/** The ports Envoy binds, by the flag that set them: a taken one is the operator's to fix. */
export type PortFlags = Pick<AgentConfig, 'proxyAdminPort' | 'prometheusPort' | 'readinessPort'>;

/**
 * Sorts an Envoy exit into the kinds the reconcile loop tells apart. A port
 * Envoy cannot bind is bad input (`rejected`), named by its flag.
 */
export function classifyExit(result: ChildResult, recent: RecentErrors, aborted: boolean, ports?: PortFlags): ProxyExit {
  const how = describeEnd(result);
  const detail = recent.toString() ? `${how}: ${recent}` : how;
  // Only a stop the agent asked for escalates to SIGKILL (execa's forceKillAfterDelay).
  if (result.isForcefullyTerminated) return { kind: 'aborted', detail, forced: true };
  if (aborted || result.isCanceled) return { kind: 'aborted', detail };
  if (result.exitCode === 0) return { kind: 'normal', detail };
  if (recent.includes(parentInitializing)) return { kind: 'parent-initializing', detail };
  const bind = recent.find(cannotBind);
  if (bind) return { kind: 'rejected', detail: describeBindFailure(bind, ports) };
  return { kind: 'failed', detail };
}

/** How the process ended, in words: a forced kill says so, apart from any other SIGKILL. */
function describeEnd(result: ChildResult): string {
  if (result.isForcefullyTerminated) return `signal ${result.signal ?? 'SIGKILL'} (forced: SIGTERM went unanswered)`;
  if (result.signal) return `signal ${result.signal}`;
  return result.code && result.exitCode === undefined ? result.code : `exit code ${result.exitCode}`;
}

function describeBindFailure(line: string, ports: PortFlags | undefined): string {
  const [, host, port, why] = cannotBind.exec(line)!;
  const flags: [string, number | undefined][] = [
    ['--proxyAdminPort', ports?.proxyAdminPort],
    ['--prometheusPort', ports?.prometheusPort],
    ['--readinessPort', ports?.readinessPort],
  ];
  const flag = flags.find(([, value]) => value === Number(port))?.[0] ?? 'a listener';
  return `${flag}: Envoy cannot bind port ${port} on ${host} (${why})`;
}

/**
 * What Envoy said when it refused its configuration at start, from an exit's
 * detail: serve mode prints "error `<reason>` initializing config '…'",
 * validate mode "error initializing configuration '<path>': <reason>".
 * Undefined for any other failure. Such a start fails the same way each
 * time, so it is not one to retry.
 */
export function configRefusal(detail: string): string | undefined {
  const reason = /error `([^`]+)` initializing config/.exec(detail)?.[1] ?? /error initializing configuration '[^']*': ([^|]+)/.exec(detail)?.[1];
  return reason?.trim() || undefined;
}
