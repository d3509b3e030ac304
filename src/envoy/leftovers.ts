import { readdir, readFile, readlink, realpath } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Clock } from '../shared/clock.ts';

/** Where to look for processes, which one is the agent itself and its uid (tests give a fake /proc). */
export interface ProcView {
  procDir: string;
  selfPid: number;
  /** The agent's uid: its Envoys run as it (default: process.getuid()). */
  uid?: number;
}

const liveProc: ProcView = { procDir: '/proc', selfPid: process.pid };

/** What the scan looks for: the bootstraps of `configPath`, run by `binaryPath` (the Envoy the agent runs). */
export interface LeftoverTarget {
  configPath: string;
  binaryPath: string;
}

/** A process the scan took for a leftover Envoy: its pid and what /proc/PID/exe names. */
export interface Leftover {
  pid: number;
  exe: string;
}

/**
 * An Envoy started by an earlier agent on the same `--configPath` and left
 * running: its `-c` names one of this directory's `envoy-rev<N>` bootstraps.
 * Envoy sets PR_SET_PDEATHSIG itself, but only once it runs; an agent
 * SIGKILLed in between leaves an orphan that holds the admin port and the
 * hot-restart shared memory the next agent needs. Our own children are not
 * leftovers, and neither is an Envoy in another mount namespace: every
 * sidecar has the same /etc/istio/proxy, so where containers share a PID
 * namespace (shareProcessNamespace, hostPID, several agents on one host)
 * the path alone would name another pod's Envoy. A command line is anyone's
 * to write: a leftover also runs the agent's Envoy binary (or one named
 * envoy) as the agent's uid, so an agent run as root kills no other program.
 */
export async function findLeftoverEnvoys(target: LeftoverTarget, view: ProcView = liveProc): Promise<Leftover[]> {
  const pids = (await readdir(view.procDir).catch(() => [] as string[])).filter((name) => /^\d+$/.test(name)).map(Number);
  const ownMounts = await mountNamespaceOf(view.procDir, view.selfPid);
  // Unknown (no /proc/self/ns): no process is known to share our file system view, so none is ours to kill.
  if (ownMounts === undefined) return [];
  const binary = await realpath(target.binaryPath).catch(() => target.binaryPath);
  const found: Leftover[] = [];
  for (const pid of pids) {
    if (pid === view.selfPid || !(await namesBootstrapOf(view.procDir, pid, target.configPath))) continue;
    if ((await parentOf(view.procDir, pid)) === view.selfPid) continue;
    if ((await mountNamespaceOf(view.procDir, pid)) !== ownMounts) continue;
    const exe = await exeOf(view.procDir, pid);
    if (exe === undefined || !isEnvoy(exe, binary) || !(await runsAs(view.procDir, pid, view.uid ?? process.getuid?.()))) continue;
    found.push({ pid, exe });
  }
  return found;
}

/** Whether the process's `-c` is one of `configPath`'s envoy-rev bootstraps. */
async function namesBootstrapOf(procDir: string, pid: number, configPath: string): Promise<boolean> {
  const argv = await readArgv(procDir, pid);
  return Boolean(argv && bootstrapOf(argv)?.startsWith(join(configPath, 'envoy-rev')));
}

/** `mnt:[4026531841]`: the same file system view, so the same --configPath is the same directory. */
function mountNamespaceOf(procDir: string, pid: number): Promise<string | undefined> {
  return readlink(join(procDir, String(pid), 'ns', 'mnt')).catch(() => undefined);
}

/** What the process runs; a binary replaced on disk since reads `<path> (deleted)`. Unknown (unreadable) is not ours. */
function exeOf(procDir: string, pid: number): Promise<string | undefined> {
  return readlink(join(procDir, String(pid), 'exe')).catch(() => undefined);
}

function isEnvoy(exe: string, binary: string): boolean {
  const path = exe.replace(/ \(deleted\)$/, '');
  return path === binary || basename(path) === 'envoy';
}

/**
 * Every uid of the process (real, effective, saved, file system: the tab-separated `Uid:` line) is the
 * agent's. A line's start only: the `Name:` line above it is the process's own to choose.
 */
async function runsAs(procDir: string, pid: number, uid: number | undefined): Promise<boolean> {
  const line = (await statusOf(procDir, pid)).split('\n').find((entry) => entry.startsWith('Uid:'));
  return line !== undefined && line.slice('Uid:'.length).trim().split('\t').every((id) => id === String(uid));
}

/**
 * SIGKILLs each leftover and waits (bounded) until it is gone; returns the ones it signalled.
 * Each pid's command line is read again just before its signal: a leftover that exited
 * since the scan may have left its pid to another process, which is not ours to kill.
 */
export async function stopLeftoverEnvoys(target: LeftoverTarget, clock: Clock, view: ProcView = liveProc): Promise<Leftover[]> {
  const killed: Leftover[] = [];
  for (const leftover of await findLeftoverEnvoys(target, view)) {
    if (!(await stillNamesConfigPath(view.procDir, leftover.pid, target.configPath))) continue;
    killed.push(leftover);
    try {
      process.kill(leftover.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  const pids = killed.map(({ pid }) => pid);
  for (let waited = 0; waited < 5_000 && (await anyAlive(view.procDir, pids)); waited += 20) await clock.sleep(20);
  return killed;
}

/**
 * The re-check before a SIGKILL, on purpose apart from the scan's filter (a break in one
 * is held by the other): the raw command line still has an argument under <configPath>/envoy-rev.
 */
export async function stillNamesConfigPath(procDir: string, pid: number, configPath: string): Promise<boolean> {
  const raw = await readFile(join(procDir, String(pid), 'cmdline'), 'utf8').catch(() => '');
  const bootstraps = join(configPath, 'envoy-rev');
  return raw.split('\0').some((arg) => arg.startsWith(bootstraps));
}

function bootstrapOf(argv: string[]): string | undefined {
  const at = argv.findIndex((arg) => arg === '-c' || arg === '--config-path');
  return at >= 0 ? argv[at + 1] : undefined;
}

async function readArgv(procDir: string, pid: number): Promise<string[] | undefined> {
  const text = await readFile(join(procDir, String(pid), 'cmdline'), 'utf8').catch(() => undefined);
  return text ? text.split('\0') : undefined;
}

/** /proc/PID/status, or '' once the process is gone. */
const statusOf = (procDir: string, pid: number) => readFile(join(procDir, String(pid), 'status'), 'utf8').catch(() => '');

async function parentOf(procDir: string, pid: number): Promise<number | undefined> {
  const match = /^PPid:\s*(\d+)/m.exec(await statusOf(procDir, pid));
  return match ? Number(match[1]) : undefined;
}

async function anyAlive(procDir: string, pids: number[]): Promise<boolean> {
  for (const pid of pids) {
    const status = await statusOf(procDir, pid);
    // A zombie has exited; its parent (not us) reaps it.
    if (status && !/^State:\s*Z/m.test(status)) return true;
  }
  return false;
}
