import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Ports for processes that cannot take port 0 (Envoy's admin, the agent's
 * listeners). A port the kernel once handed out for port 0 comes from the
 * ephemeral range, where any outgoing connection (a fetch, Envoy's own
 * upstream) may take it before the test binds it again. So ports come from
 * below that range, and a lock file per port keeps parallel test files
 * (separate processes) from handing out the same one.
 */

export interface PortRange {
  low: number;
  high: number;
}

export interface PortAllocatorOptions {
  /** Where the lock files live; shared by every test process of the machine. */
  dir: string;
  /** The ports to hand out from, before the ephemeral range is cut away. */
  range: PortRange;
  /** The kernel's ephemeral range (net.ipv4.ip_local_port_range). */
  ephemeral: PortRange;
  /** Who holds the locks this allocator takes: pid and start time, so a reused pid is no owner. */
  owner: string;
  /** Whether a lock's owner still runs; a dead owner's locks are taken over. */
  ownerAlive: (owner: string) => boolean;
  /** Whether the port can be bound right now (something outside the scheme may hold it). */
  bindable: (port: number) => Promise<boolean>;
  /** Where the scan starts, so parallel processes do not all race for the same first port. */
  start?: number;
}

/** Hands out ports outside the ephemeral range, reserved across processes by lock files. */
export class PortAllocator {
  readonly #options: PortAllocatorOptions;
  readonly #ports: number[];
  readonly #held = new Set<number>();
  #next: number;

  constructor(options: PortAllocatorOptions) {
    this.#options = options;
    this.#ports = usablePorts(options.range, options.ephemeral);
    if (this.#ports.length === 0) throw new Error(`no test ports: ${options.range.low}-${options.range.high} lies inside the ephemeral range`);
    this.#next = Math.abs(options.start ?? 0) % this.#ports.length;
    mkdirSync(options.dir, { recursive: true, mode: 0o1777 });
  }

  /** A port no other allocator holds and nothing binds right now. */
  async take(): Promise<number> {
    for (let tried = 0; tried < this.#ports.length; tried++) {
      const port = this.#ports[this.#next]!;
      this.#next = (this.#next + 1) % this.#ports.length;
      if (this.#held.has(port) || !this.#lock(port)) continue;
      if (await this.#options.bindable(port)) return (this.#held.add(port), port);
      this.release(port);
    }
    throw new Error(`no free test port in ${this.#options.range.low}-${this.#options.range.high} (lock files in ${this.#options.dir})`);
  }

  /** Hands a port back; the process's exit releases every port anyway. */
  release(port: number): void {
    this.#held.delete(port);
    try {
      if (readFileSync(this.#lockPath(port), 'utf8') === this.#options.owner) unlinkSync(this.#lockPath(port));
    } catch {
      // Already gone: nothing to release.
    }
  }

  releaseAll(): void {
    for (const port of [...this.#held]) this.release(port);
  }

  /** Creates the port's lock file exclusively; takes over one whose owner is gone. */
  #lock(port: number): boolean {
    const path = this.#lockPath(port);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(path, this.#options.owner, { flag: 'wx', mode: 0o666 });
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readOwner(path);
      if (holder === undefined || this.#options.ownerAlive(holder)) return false;
      // Two processes may both find the owner dead: only one of them creates the file again.
      try {
        unlinkSync(path);
      } catch {
        return false;
      }
    }
    return false;
  }

  #lockPath(port: number): string {
    return join(this.#options.dir, String(port));
  }
}

function usablePorts(range: PortRange, ephemeral: PortRange): number[] {
  const ports: number[] = [];
  for (let port = range.low; port <= range.high; port++) if (port < ephemeral.low || port > ephemeral.high) ports.push(port);
  return ports;
}

/** An empty file is one being written right now: treated as held. */
function readOwner(path: string): string | undefined {
  try {
    const text = readFileSync(path, 'utf8');
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

/** The kernel's ephemeral range; Linux's default when it cannot be read. */
export function ephemeralRange(path = '/proc/sys/net/ipv4/ip_local_port_range'): PortRange {
  try {
    const [low, high] = readFileSync(path, 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return { low: low!, high: high! };
  } catch {
    // Not Linux, or no /proc: fall through.
  }
  return { low: 32768, high: 60999 };
}

/** `pid:starttime`: the start time (field 22 of /proc/<pid>/stat) tells a reused pid apart. */
export function processOwner(pid: number): string {
  return `${pid}:${startTime(pid) ?? ''}`;
}

function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function ownerAlive(owner: string): boolean {
  const pid = Number(owner.split(':')[0]);
  return Number.isInteger(pid) && pid > 0 && processOwner(pid) === owner;
}

/** Binds the port on every address, as Envoy's and the agent's listeners (0.0.0.0, 127.0.0.1) will. */
export function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '0.0.0.0', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Below the ephemeral range and above the ports Istio's components and the tests' fixed ports use. */
export const testPortRange: PortRange = { low: 20000, high: 32767 };
export const testPortLockDir = join(tmpdir(), 'pilot-agent-test-ports');

let shared: PortAllocator | undefined;

function allocator(): PortAllocator {
  if (shared) return shared;
  const owner = processOwner(process.pid);
  shared = new PortAllocator({
    dir: testPortLockDir,
    range: testPortRange,
    ephemeral: ephemeralRange(),
    owner,
    ownerAlive,
    bindable: canBind,
    start: process.pid * 97,
  });
  const created = shared;
  process.once('exit', () => created.releaseAll());
  return created;
}

/**
 * A TCP port reserved for this test process until it exits: outside the
 * ephemeral range, and handed to no other test process meanwhile.
 */
export function freePort(): Promise<number> {
  return allocator().take();
}
