import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { LineLog } from './lines.ts';
import { agentBin, envoyBin, nodeBin } from './paths.ts';
import { freePort } from './ports.ts';

export interface AgentLogEntry {
  level: number;
  msg: string;
  epoch?: number;
  pid?: number;
  envoyPid?: number;
  component?: string;
  [key: string]: unknown;
}

export interface RunningAgent {
  dir: string;
  /** The agent process's pid. */
  pid: number;
  adminPort: number;
  log: LineLog<AgentLogEntry>;
  stderr: () => string;
  /** Pids of every Envoy this agent started. */
  envoyPids: () => number[];
  exited: Promise<{ exitCode?: number; signal?: string }>;
  stop(signal?: NodeJS.Signals): Promise<{ exitCode?: number; signal?: string }>;
}

export interface AgentOptions {
  type?: string;
  discoveryAddress: string;
  args?: string[];
  env?: Record<string, string>;
  /** A dir to use (and leave in place on stop), e.g. to start a second agent on the same --configPath. */
  dir?: string;
  /** Another build's entry point (bench/cost.ts compares builds); default: this checkout's. */
  bin?: string;
}

/** Runs `pilot-agent proxy` as a real process with a private config dir and ports. */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'pilot-agent-test-')));
  const adminPort = await freePort();
  const args = [
    options.bin ?? agentBin, 'proxy', options.type ?? 'sidecar',
    '--serviceregistry', 'Other', '--ip', '127.0.0.1',
    '--configPath', join(dir, 'config'), '--certDir', join(dir, 'certs'),
    '--binaryPath', envoyBin, '--discoveryAddress', options.discoveryAddress,
    '--proxyAdminPort', String(adminPort), '--statusPort', '0', '--prometheusPort', '0',
    // Istio's 15021 would be shared by every agent of a parallel run (and is checked free at start).
    '--readinessPort', String(await freePort()),
    '--drainDuration', '1s', '--parentShutdownDuration', '3s', '--terminationDrainDuration', '1s',
    // Istio's default socket would be shared by every agent of a parallel run.
    '--sdsSocket', join(dir, 'sds.sock'),
    ...(options.args ?? []),
  ];
  // A clean stop may take the drain plus the agent's own 5 s SIGKILL grace for
  // Envoy; killing the agent sooner would orphan Envoy and fail for the wrong reason.
  const child: ResultPromise = execa(nodeBin, args, { reject: false, buffer: false, stdin: 'ignore', env: options.env, forceKillAfterDelay: 30_000 });
  const log = new LineLog<AgentLogEntry>(child.stdout!);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.then((result) => ({ exitCode: result.exitCode, signal: result.signal }));
  const envoyPids = () => log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.envoyPid!);
  return {
    dir,
    pid: child.pid!,
    adminPort,
    log,
    stderr: () => stderr,
    envoyPids,
    exited,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      const result = await exited;
      if (!options.dir) await rm(dir, { recursive: true, force: true });
      return result;
    },
  };
}

/** True while a process with this pid exists (zombies count as gone). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !/^State:\s+Z/m.test(readStatus(pid));
}

function readStatus(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}




/** Fails when any of the pids is still running after a short grace period. */
export async function assertGone(pids: readonly number[], graceMs = 3000): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (pids.some(isAlive)) {
    if (Date.now() > deadline) throw new Error(`Envoy process(es) left behind: ${pids.filter(isAlive).join(', ')}`);
    await sleep(50);
  }
}
