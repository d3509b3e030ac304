import { toWholeSeconds } from '../shared/duration.ts';
import { badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';

/**
 * What the flags alone show is wrong together, caught before anything
 * starts: otherwise Envoy or the status server fails to bind at run time
 * and the agent retries for minutes before it exits 1.
 */
export function checkFlagCombinations(config: AgentConfig): void {
  checkPortsDistinct(config);
  checkShutdownAfterDrain(config);
}

/** Every port the agent or Envoy listens on, by flag; 0 (off, or any free port) never collides. */
function listeningPorts(config: AgentConfig): [flag: string, port: number][] {
  const ports: [string, number][] = [
    ['--proxyAdminPort', config.proxyAdminPort],
    ['--statusPort', config.statusPort],
    ['--readinessPort', config.readinessPort],
    ['--prometheusPort', config.prometheusPort],
  ];
  return ports.filter(([, port]) => port !== 0);
}

function checkPortsDistinct(config: AgentConfig): void {
  const seen = new Map<number, string>();
  for (const [flag, port] of listeningPorts(config)) {
    const other = seen.get(port);
    if (other) throw badFlag(flag, `${port} is also ${other}; each listener needs its own port`);
    seen.set(port, flag);
  }
}

/**
 * Envoy's docs: the drain time should be less than the parent shutdown time,
 * or the parent is killed with connections still draining. Compared in the
 * whole seconds Envoy is given; equal is tolerated.
 */
function checkShutdownAfterDrain(config: AgentConfig): void {
  const drain = toWholeSeconds(config.drainDurationMs);
  const parent = toWholeSeconds(config.parentShutdownDurationMs);
  if (parent < drain)
    throw badFlag('--parentShutdownDuration', `${parent}s is shorter than --drainDuration (${drain}s): Envoy would kill the parent mid-drain`);
}
