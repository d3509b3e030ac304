import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../shared/clock.ts';

/** Where to look for processes, and which one is the agent itself (tests give a fake /proc). */
export interface ProcView {
  procDir: string;
  selfPid: number;
}

const liveProc: ProcView = { procDir: '/proc', selfPid: process.pid };

/**
 * An Envoy started by an earlier agent on the same `--configPath` and left
 * running: its `-c` names one of this directory's `envoy-rev<N>` bootstraps.
 * Envoy sets PR_SET_PDEATHSIG itself, but only once it runs; an agent
 * SIGKILLed in between leaves an orphan that holds the admin port and the
 * hot-restart shared memory the next agent needs. Our own children are not
 * leftovers, and neither is an Envoy in another mount namespace: every
 * sidecar has the same /etc/istio/proxy, so where containers share a PID
 * namespace (shareProcessNamespace, hostPID, several agents on one host)
 * the path alone would name another pod's Envoy.
 */
export async function findLeftoverEnvoys(configPath: string, view: ProcView = liveProc): Promise<number[]> {
  const prefix = join(configPath, 'envoy-rev');
  const pids = (await readdir(view.procDir).catch(() => [] as string[])).filter((name) => /^\d+$/.test(name)).map(Number);
  const ownMounts = await mountNamespaceOf(view.procDir, view.selfPid);
  const found: number[] = [];
  for (const pid of pids) {
    if (pid === view.selfPid) continue;
    const argv = await readArgv(view.procDir, pid);
    if (!argv || !bootstrapOf(argv)?.startsWith(prefix)) continue;
    if ((await parentOf(view.procDir, pid)) === view.selfPid) continue;
    // Unknown on either side (no /proc/*/ns): not ours to kill.
    const mounts = await mountNamespaceOf(view.procDir, pid);
    if (ownMounts !== undefined && mounts === ownMounts) found.push(pid);
  }
  return found;
}

/** `mnt:[4026531841]`: the same file system view, so the same --configPath is the same directory. */
function mountNamespaceOf(procDir: string, pid: number): Promise<string | undefined> {
  return readlink(join(procDir, String(pid), 'ns', 'mnt')).catch(() => undefined);
}

/**
 * SIGKILLs each leftover and waits (bounded) until it is gone; returns the pids it stopped.
 * Each pid's command line is read again just before its signal: a leftover that exited
 * since the scan may have left its pid to another process, which is not ours to kill.
 */
export async function stopLeftoverEnvoys(configPath: string, clock: Clock, view: ProcView = liveProc): Promise<number[]> {
  const pids = await findLeftoverEnvoys(configPath, view);
  for (const pid of pids) {
    if (!(await stillNamesConfigPath(view.procDir, pid, configPath))) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  for (let waited = 0; waited < 5_000 && (await anyAlive(view.procDir, pids)); waited += 20) await clock.sleep(20);
  return pids;
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
