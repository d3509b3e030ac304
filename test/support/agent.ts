import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { assertBundleFresh } from './bundle-fresh.ts';
import { openFifo } from './fifo-stdio.ts';
import { LineLog } from './lines.ts';
import { agentBin, envoyBin, nodeBin } from './paths.ts';
import { freePort } from './ports.ts';
import { findEnvoys, own, ownDir, ownedPids, releaseDir } from './processes.ts';

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
  /**
   * Pids of every Envoy this agent started, in start order: from its log, and
   * found independently (its children, or naming its dirs in their command line).
   */
  envoyPids: () => number[];
  /** Live Envoys found without the agent's log: its children, or naming its dirs. */
  liveEnvoys: () => number[];
  /**
   * The agent's exit. Each read starts a deadline (exitDeadlineMs, shorter
   * than the runner's timeout): an agent that never exits fails the wait
   * with its pid, stderr and last log lines instead of hanging the test.
   */
  readonly exited: Promise<{ exitCode?: number; signal?: string }>;
  stop(signal?: NodeJS.Signals): Promise<{ exitCode?: number; signal?: string }>;
  /** Fails when an Envoy of this agent, found in /proc, outlives the grace period. */
  assertNoEnvoyLeft(graceMs?: number): Promise<void>;
}

export interface AgentOptions {
  type?: string;
  /** Unused with injectedOnly. */
  discoveryAddress: string;
  args?: string[];
  env?: Record<string, string>;
  /** A dir to use (and leave in place on stop), e.g. to start a second agent on the same --configPath. */
  dir?: string;
  /** Another build's entry point (bench/cost.ts compares builds); default: this checkout's. */
  bin?: string;
  /** Leave --proxyAdminPort out (a custom bootstrap names its own); `adminPort` is then this one. */
  adminPortFromFile?: number;
  /** The agent's working directory, against which Istio's relative default paths resolve. */
  cwd?: string;
  /** Flags for node before the entry point (e.g. `--import` a fault injector). */
  nodeArgs?: string[];
  /** Run the entry point itself, through its shebang, as the image does (node from .tools/bin on the PATH). */
  viaShebang?: boolean;
  /** A command the agent runs under, e.g. `ip netns exec <name>` (it execs: the pid stays the agent's). */
  wrap?: string[];
  /** Only `proxy <type>` and `args`, as Istio's injector renders them: no discovery address, paths or ports of the test's. */
  injectedOnly?: boolean;
  /** The agent's stdout and stderr are FIFOs, as a container runtime gives them, not sockets (an access log to /dev/stdout opens on these only). */
  fifoStdio?: boolean;
}

function flagValues(args: readonly string[], flag: string): string[] {
  return args.flatMap((arg, index) => (arg === flag && args[index + 1] ? [args[index + 1]!] : arg.startsWith(`${flag}=`) ? [arg.slice(flag.length + 1)] : []));
}

/** Past the 30 s SIGKILL grace of a stop, well short of the runner's 180 s timeout. */
export const exitDeadlineMs = 60_000;

/** Runs `pilot-agent proxy` as a real process with a private config dir and ports. */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  if (!options.bin) assertBundleFresh();
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'pilot-agent-test-')));
  const adminPort = options.adminPortFromFile ?? (await freePort());
  const args = options.injectedOnly ? [options.bin ?? agentBin, 'proxy', options.type ?? 'sidecar', ...(options.args ?? [])] : [
    options.bin ?? agentBin, 'proxy', options.type ?? 'sidecar',
    '--serviceregistry', 'Other', '--ip', '127.0.0.1',
    '--configPath', join(dir, 'config'), '--certDir', join(dir, 'certs'),
    '--binaryPath', envoyBin, '--discoveryAddress', options.discoveryAddress,
    ...(options.adminPortFromFile === undefined ? ['--proxyAdminPort', String(adminPort)] : []), '--statusPort', '0', '--prometheusPort', '0',
    // Istio's 15021 would be shared by every agent of a parallel run (and is checked free at start).
    '--readinessPort', String(await freePort()),
    '--drainDuration', '1s', '--parentShutdownDuration', '3s', '--terminationDrainDuration', '1s',
    // Istio's default socket would be shared by every agent of a parallel run.
    '--sdsSocket', join(dir, 'sds.sock'),
    ...(options.args ?? []),
  ];
  // A clean stop may take the drain plus the agent's own 5 s SIGKILL grace for
  // Envoy; killing the agent sooner would orphan Envoy and fail for the wrong reason.
  // Own process group, owned by processes.ts: reaped even when the test or its runner dies.
  const [file, argv, path] = options.viaShebang
    ? [args[0]!, args.slice(1), { PATH: `${dirname(nodeBin)}:${process.env.PATH ?? ''}` }]
    : [nodeBin, [...(options.nodeArgs ?? []), ...args], {}];
  // `wrap` execs the agent (e.g. `ip netns exec <name>`): the pid stays the agent's.
  const [command, ...prefix] = [...(options.wrap ?? []), file];
  const fifos = options.fifoStdio ? [await openFifo(dir, 'agent-stdout'), await openFifo(dir, 'agent-stderr')] : undefined;
  const child: ResultPromise = execa(command!, [...prefix, ...argv], {
    reject: false,
    buffer: false,
    stdin: 'ignore',
    // A number is a descriptor the child gets as is (execa's types let only 3-9 through).
    ...(fifos ? { stdout: fifos[0]!.writeFd as 3, stderr: fifos[1]!.writeFd as 3 } : {}),
    env: { ...options.env, ...path },
    cwd: options.cwd,
    forceKillAfterDelay: 30_000,
    detached: true,
  });
  for (const fifo of fifos ?? []) fifo.release();
  const [stdout, stderrStream] = fifos ? [fifos[0]!.reader, fifos[1]!.reader] : [child.stdout!, child.stderr!];
  const marks = [dir, ...flagValues(options.args ?? [], '--configPath')];
  for (const mark of marks) ownDir(mark, { remove: mark === dir && !options.dir });
  let stderr = '';
  const log = new LineLog<AgentLogEntry>(
    stdout,
    () => `the agent's stdout closed (exit code ${child.exitCode ?? '?'}); stderr: ${stderr.trim() || '(empty)'}`,
  );
  stderrStream.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.then((result) => ({ exitCode: result.exitCode, signal: result.signal }));
  own(child, exited, `agent ${dir}`);
  const liveEnvoys = () => findEnvoys({ parent: child.pid, marks, foreignParents: ownedPids().filter((pid) => pid !== child.pid) });
  const assertNoEnvoyLeft = async (graceMs = 3000) => {
    const deadline = Date.now() + graceMs;
    while (liveEnvoys().length > 0 && Date.now() < deadline) await sleep(50);
    const left = liveEnvoys();
    for (const pid of left) process.kill(pid, 'SIGKILL');
    if (left.length > 0) throw new Error(`Envoy process(es) left behind (found in /proc, not from the agent's log): ${left.join(', ')}`);
  };
  const exitedWithin = () => new Promise<{ exitCode?: number; signal?: string }>((resolve, reject) => {
    const why = () =>
      `the agent (pid ${child.pid}) did not exit within ${exitDeadlineMs} ms; stderr: ${stderr.trim() || '(empty)'}; last lines:\n${log.raw.slice(-15).join('\n')}`;
    // unref: a wait the test gave up on (a race) keeps no process alive.
    const timer = setTimeout(() => reject(new Error(why())), exitDeadlineMs).unref();
    void exited.then((result) => (clearTimeout(timer), resolve(result)));
  });
  const seen: number[] = [];
  const envoyPids = () => {
    const logged = log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.envoyPid!);
    for (const pid of [...logged, ...liveEnvoys()]) if (!seen.includes(pid)) seen.push(pid);
    return [...seen];
  };
  return {
    dir,
    pid: child.pid!,
    adminPort,
    log,
    stderr: () => stderr,
    envoyPids,
    liveEnvoys,
    get exited() {
      return exitedWithin();
    },
    /** Stops the agent, then fails if any of its Envoys outlived it (a SIGKILLed chain may take Envoy's 10 s RPC retry). */
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      const result = await exitedWithin();
      try {
        await assertNoEnvoyLeft(15_000);
      } finally {
        if (!options.dir) await rm(dir, { recursive: true, force: true });
        for (const mark of marks) releaseDir(mark);
      }
      return result;
    },
    assertNoEnvoyLeft,
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
