// What a process costs, read from /proc: memory from /proc/PID/status, CPU
// time and wake-ups summed over every thread (/proc/PID/task/*), since libuv's
// worker threads and V8's own wake up too.
import { readdirSync, readFileSync } from 'node:fs';

export interface Memory { rssMb: number; rssAnonMb: number }
export interface Activity { cpuNs: number; wakeups: number }

const read = (path: string) => { try { return readFileSync(path, 'utf8'); } catch { return ''; } };
const statusKb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);

export function memory(pid: number): Memory {
  const status = read(`/proc/${pid}/status`);
  return { rssMb: statusKb(status, 'VmRSS') / 1024, rssAnonMb: statusKb(status, 'RssAnon') / 1024 };
}

/** On-CPU time (schedstat, ns) and voluntary context switches, summed over the live threads. */
export function activity(pid: number): Activity {
  let cpuNs = 0;
  let wakeups = 0;
  for (const tid of tasks(pid)) {
    cpuNs += Number(read(`/proc/${pid}/task/${tid}/schedstat`).split(' ')[0] || 0);
    wakeups += statusKb(read(`/proc/${pid}/task/${tid}/status`), 'voluntary_ctxt_switches');
  }
  return { cpuNs, wakeups };
}

function tasks(pid: number): string[] {
  try { return readdirSync(`/proc/${pid}/task`); } catch { return []; }
}

/** Idle figures over a window: mCPU (thousandths of a core) and wake-ups per second. */
export function idleRates(before: Activity, after: Activity, seconds: number) {
  return { idleMcpu: (after.cpuNs - before.cpuNs) / 1e6 / seconds, wakeupsPerS: (after.wakeups - before.wakeups) / seconds };
}
