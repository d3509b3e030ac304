import { closeSync, openSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { getHeapSpaceStatistics } from 'node:v8';
import { Counter, Gauge } from './counter-gauge.ts';
import { Histogram } from './histogram.ts';
import type { Registry } from './registry.ts';

/**
 * The process and Node.js figures prom-client's default metrics gave, under
 * the same names, computed on scrape: no timer wakes the process for them.
 * Left out: `nodejs_active_*_total` (gauges named like counters; sum the
 * per-type gauges) and the sampled event-loop lag percentiles.
 */
export function registerRuntimeMetrics(registry: Registry, prefix: string): void {
  const registers = [registry];
  const gauge = (name: string, help: string, read: () => number | Promise<number>) =>
    new Gauge({ name: prefix + name, help, registers, async collect() { this.set(await read()); } });
  const cpu = (name: string, help: string, read: (usage: NodeJS.CpuUsage) => number) =>
    new Counter({ name: prefix + name, help, registers, collect() { this.reset(); this.inc(read(process.cpuUsage()) / 1e6); } });
  cpu('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', (u) => u.user);
  cpu('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', (u) => u.system);
  cpu('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', (u) => u.user + u.system);
  const startTime = Math.round(Date.now() / 1000 - process.uptime());
  gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => startTime);
  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => procStatus('VmRSS', () => process.memoryUsage.rss()));
  gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', () => procStatus('VmSize'));
  gauge('process_heap_bytes', 'Process heap size in bytes.', () => procStatus('VmData'));
  gauge('process_open_fds', 'Number of open file descriptors.', () => readdir('/proc/self/fd').then((fds) => fds.length - 1, () => 0));
  gauge('process_max_fds', 'Maximum number of open file descriptors.', maxFds);
  gauge('nodejs_eventloop_lag_seconds', 'Lag of event loop in seconds.', eventLoopLag);
  byType(
    registry,
    prefix + 'nodejs_active_resources',
    'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
    () => process.getActiveResourcesInfo(),
  );
  byType(registry, prefix + 'nodejs_active_handles', 'Number of active libuv handles grouped by handle type. Every handle type is C++ class name.', () =>
    internals('_getActiveHandles'),
  );
  byType(registry, prefix + 'nodejs_active_requests', 'Number of active libuv requests grouped by request type. Every request type is C++ class name.', () =>
    internals('_getActiveRequests'),
  );
  gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', () => process.memoryUsage().heapTotal);
  gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', () => process.memoryUsage().heapUsed);
  gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', () => process.memoryUsage().external);
  registerHeapSpaces(registry, prefix);
  const [major, minor, patch] = process.versions.node.split('.');
  new Gauge({ name: `${prefix}nodejs_version_info`, help: 'Node.js version info.', labelNames: ['version', 'major', 'minor', 'patch'], registers }).set(
    { version: process.version, major: major!, minor: minor!, patch: patch! },
    1,
  );
  registerGcDurations(registry, prefix);
}

/** A field of /proc/self/status in bytes; elsewhere (not Linux) the fallback, or 0. */
function procStatus(field: string, fallback: () => number = () => 0): number {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readProcText('/proc/self/status'))?.[1];
  return kb === undefined ? fallback() : Number(kb) * 1024;
}

function maxFds(): number {
  return Number(/^Max open files\s+(\d+)/m.exec(readProcText('/proc/self/limits'))?.[1] ?? 0);
}

/**
 * One buffer for every read of a /proc file: fs's readFile takes 64 KiB for
 * each file that states no size, four per scrape (docs/benchmarks.md, Soak).
 */
const procBuffer = Buffer.allocUnsafeSlow(16 * 1024);

/** A small /proc file's text (its first 16 KiB), read at once: procfs never waits on a disk. '' when it cannot be read. */
export function readProcText(path: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    let size = 0;
    for (let n = -1; n !== 0 && size < procBuffer.length; size += n) n = readSync(fd, procBuffer, size, procBuffer.length - size, null);
    return procBuffer.toString('utf8', 0, size);
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** How late a callback queued now runs: the event loop's lag, measured when asked. */
async function eventLoopLag(): Promise<number> {
  const start = process.hrtime.bigint();
  await nextTurn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Node's undocumented handle and request lists, by constructor name, as prom-client read them. */
function internals(method: '_getActiveHandles' | '_getActiveRequests'): string[] {
  const list = (process as unknown as Record<string, (() => object[]) | undefined>)[method]?.() ?? [];
  return list.map((item) => item?.constructor?.name ?? 'unknown');
}

function byType(registry: Registry, name: string, help: string, read: () => string[]): void {
  new Gauge({
    name, help, labelNames: ['type'], registers: [registry],
    collect() {
      this.reset();
      for (const type of read()) this.inc({ type });
    },
  });
}

function registerHeapSpaces(registry: Registry, prefix: string): void {
  const fields = [['total', 'space_size', 'total'], ['used', 'space_used_size', 'used'], ['available', 'space_available_size', 'available']] as const;
  for (const [suffix, field, word] of fields) {
    new Gauge({
      name: `${prefix}nodejs_heap_space_size_${suffix}_bytes`,
      help: `Process heap space size ${word} from Node.js in bytes.`,
      labelNames: ['space'],
      registers: [registry],
      collect() {
        for (const space of getHeapSpaceStatistics()) this.set({ space: space.space_name.replace(/_space$/, '') }, space[field]);
      },
    });
  }
}

/** GC pauses, reported by V8 as they happen: no polling. */
function registerGcDurations(registry: Registry, prefix: string): void {
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  const histogram = new Histogram({
    name: `${prefix}nodejs_gc_duration_seconds`,
    help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
    labelNames: ['kind'],
    buckets: [0.001, 0.01, 0.1, 1, 2, 5],
    registers: [registry],
  });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      histogram.observe({ kind: kinds[(entry as unknown as { detail: { kind: number } }).detail.kind] ?? 'unknown' }, entry.duration / 1000);
  }).observe({ entryTypes: ['gc'] });
}
