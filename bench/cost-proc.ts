// What a process costs, read from /proc: RSS and anonymous RSS, page tables
// and threads from /proc/PID/status; PSS and USS from /proc/PID/smaps_rollup
// (with N pods on a node, the file-backed pages of one image are shared, so
// PSS is what the node pays for each); CPU time and wake-ups summed over every
// thread (/proc/PID/task/*), since libuv's worker threads and V8's own wake up too.
import { readdirSync, readFileSync } from 'node:fs';

export interface Memory { rssMb: number; rssAnonMb: number; pssMb: number; ussMb: number; pageTablesMb: number; threads: number }
export interface Activity { cpuNs: number; wakeups: number }

const read = (path: string) => { try { return readFileSync(path, 'utf8'); } catch { return ''; } };
const statusKb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);

export function memory(pid: number): Memory {
  const status = read(`/proc/${pid}/status`);
  const rollup = read(`/proc/${pid}/smaps_rollup`);
  const mb = (text: string, ...fields: string[]) => fields.reduce((sum, field) => sum + statusKb(text, field), 0) / 1024;
  return {
    rssMb: mb(status, 'VmRSS'), rssAnonMb: mb(status, 'RssAnon'),
    pssMb: mb(rollup, 'Pss'), ussMb: mb(rollup, 'Private_Clean', 'Private_Dirty', 'Private_Hugetlb'),
    pageTablesMb: mb(status, 'VmPTE'), threads: statusKb(status, 'Threads'),
  };
}

/** Several processes as one (a pod: the agent and its Envoys): every figure summed. */
export function sumMemory(list: Memory[]): Memory {
  const keys = ['rssMb', 'rssAnonMb', 'pssMb', 'ussMb', 'pageTablesMb', 'threads'] as const;
  return Object.fromEntries(keys.map((key) => [key, list.reduce((sum, m) => sum + m[key], 0)])) as unknown as Memory;
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
