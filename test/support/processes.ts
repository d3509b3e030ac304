import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after } from 'node:test';
import { repoRoot } from './paths.ts';

/**
 * Owns every process a test starts: reaps them when the test file ends (also
 * when a test failed or forgot), and, through a detached reaper that sees its
 * stdin close, when the test process itself is killed. Node has no prctl
 * (PR_SET_PDEATHSIG), so the pipe's end is the tie to the runner's death.
 */
interface Owned {
  pid: number;
  name: string;
  exited: Promise<unknown>;
  done: boolean;
}

const owned = new Set<Owned>();
const dirs = new Map<string, { remove: boolean }>();
let reaper: ChildProcess | undefined;

function tell(line: string): void {
  reaper ??= startReaper();
  reaper.stdin!.write(`${line}\n`);
}

function startReaper(): ChildProcess {
  const child = spawn('bash', [`${repoRoot}test/support/reaper.sh`], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  (child.stdin as unknown as { unref(): void }).unref();
  return child;
}

/**
 * Takes a spawned child (execa's ResultPromise or any ChildProcess with a
 * settle promise). Start it `detached: true` so its whole process group is reaped.
 */
export function own<T extends { pid?: number }>(child: T, exited: PromiseLike<unknown>, name: string): T {
  if (child.pid === undefined) return child;
  const entry: Owned = { pid: child.pid, name, exited: Promise.resolve(exited).catch(() => undefined), done: false };
  owned.add(entry);
  tell(`pid ${entry.pid}`);
  void entry.exited.then(() => {
    entry.done = true;
    owned.delete(entry);
    tell(`gone ${entry.pid}`);
  });
  return child;
}

/** Processes naming `dir` in their command line are reaped with the test; `remove` also deletes it. */
export function ownDir(dir: string, options: { remove: boolean }): void {
  dirs.set(dir, options);
  tell(`${options.remove ? 'dir' : 'mark'} ${dir}`);
}

/** The caller removed or stopped using `dir`. */
export function releaseDir(dir: string): void {
  const options = dirs.get(dir);
  if (!options) return;
  dirs.delete(dir);
  tell(`${options.remove ? 'undir' : 'unmark'} ${dir}`);
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  argv: string[];
}

/** Every live (non-zombie) process on the host, read from /proc. */
export function listProcesses(): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const info = readProcess(Number(name));
    if (info) found.push(info);
  }
  return found;
}

function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z' || state === 'X') return undefined;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return { pid, ppid: Number(ppid), argv };
  } catch {
    return undefined;
  }
}

/** Pids of the owned processes still running. */
export function ownedPids(): number[] {
  return [...owned].filter((entry) => !entry.done).map((entry) => entry.pid);
}

/**
 * Live Envoys (not `--mode validate` runs) that are children of `parent` or
 * name one of `marks` in their command line, except children of `foreignParents`
 * (another agent sharing a dir).
 */
export function findEnvoys(options: { parent?: number; marks: readonly string[]; foreignParents?: readonly number[] }): number[] {
  const isEnvoy = (argv: string[]) => /(^|\/)envoy$/.test(argv[0] ?? '') && !argv.includes('validate');
  return listProcesses()
    .filter(({ argv, ppid }) => isEnvoy(argv) && !options.foreignParents?.includes(ppid))
    .filter(({ ppid, argv }) => ppid === options.parent || argv.some((arg) => options.marks.some((mark) => mark !== '' && arg.includes(mark))))
    .map(({ pid }) => pid);
}

/** Stops every owned process still running (SIGTERM, then SIGKILL to its group) and waits for it. */
export async function reapOwned(graceMs = 10_000): Promise<string[]> {
  const live = [...owned].filter((entry) => !entry.done);
  await Promise.all(live.map((entry) => reapOne(entry, graceMs)));
  return live.map((entry) => `${entry.name} (pid ${entry.pid})`);
}

async function reapOne(entry: Owned, graceMs: number): Promise<void> {
  signal(entry.pid, 'SIGTERM');
  await Promise.race([entry.exited, sleep(graceMs)]);
  if (!entry.done) signal(-entry.pid, 'SIGKILL');
  signal(entry.pid, 'SIGKILL');
  await entry.exited;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** Ends a test file: reaps owned processes, then fails if an Envoy naming an owned dir outlived them. */
export async function reapAll(): Promise<void> {
  const running = await reapOwned();
  const marks = [...dirs.keys()];
  const envoys = marks.length ? findEnvoys({ marks }) : [];
  for (const pid of envoys) signal(pid, 'SIGKILL');
  for (const [dir, { remove }] of dirs) if (remove) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
  if (reaper) reaper.stdin!.end('done\n');
  reaper = undefined;
  if (envoys.length)
    throw new Error(`Envoy(s) left behind after their agents ended: ${envoys.join(', ')} (still running at the end: ${running.join(', ') || 'none'})`);
}

// Only under the test runner: bench/ and scripts/ import these helpers too.
if (process.env.NODE_TEST_CONTEXT) after(reapAll);
