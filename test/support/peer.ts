import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { LineLog } from './lines.ts';
import { peerBin } from './paths.ts';
import { own, ownDir, releaseDir } from './processes.ts';

export interface PeerEvent {
  event: string;
  typeUrl?: string;
  version?: string;
  nonce?: string;
  error?: string;
  node?: string;
  address?: string;
  [key: string]: unknown;
}

export interface Peer {
  address: string;
  /** The peer's process (a bench reads its CPU time). */
  pid: number;
  port: number;
  log: LineLog<PeerEvent>;
  /** Replaces the served resources; the peer pushes a new snapshot. */
  setResources(resources: unknown[]): Promise<void>;
  /** Replaces the name table served on the NDS type URL (undefined: none). */
  setNameTable(table: NameTableJson | undefined): Promise<void>;
  /** From now on, new calls are accepted and answered nothing (SIGUSR1); resolves once the peer says so. */
  silence(): Promise<void>;
  /** Serves the held calls and every later one again (SIGUSR2). */
  answer(): Promise<void>;
  stop(): Promise<void>;
}

/** Istio's NameTable as the peer's config file takes it: host → NameInfo. */
export type NameTableJson = Record<string, { ips: string[]; registry?: string; shortname?: string; namespace?: string }>;

/** Starts the go-control-plane test peer serving the given resources (and a name table, when given). */
export async function startPeer(resources: unknown[], options: { address?: string; args?: string[]; nameTable?: NameTableJson } = {}): Promise<Peer> {
  const dir = await mkdtemp(join(tmpdir(), 'xds-peer-'));
  ownDir(dir, { remove: true });
  const file = join(dir, 'resources.json');
  let served = { resources, nameTable: options.nameTable };
  const write = () => writeFile(file, JSON.stringify(served));
  await write();
  const child: ResultPromise = execa(peerBin, ['--config', file, '--address', options.address ?? '127.0.0.1:0', '--poll', '50ms', ...(options.args ?? [])], {
    reject: false,
    buffer: false,
    stdin: 'ignore',
    stderr: 'inherit',
    detached: true,
  });
  own(child, child, `xDS peer ${dir}`);
  const log = new LineLog<PeerEvent>(child.stdout!);
  const stop = async () => {
    child.kill('SIGTERM');
    await child;
    await rm(dir, { recursive: true, force: true });
    releaseDir(dir);
  };
  const listening = await log.waitFor((entry) => entry.event === 'listening', 10_000, 'the peer to listen').catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  const address = String(listening.address);
  return {
    address,
    pid: child.pid!,
    port: Number(address.split(':').at(-1)),
    log,
    setResources: async (next) => {
      served = { ...served, resources: next };
      await write();
    },
    setNameTable: async (table) => {
      served = { ...served, nameTable: table };
      await write();
    },
    silence: () => signalled(child.pid!, 'SIGUSR1', log, 'silent'),
    answer: () => signalled(child.pid!, 'SIGUSR2', log, 'answering'),
    stop,
  };
}

/** Signals the peer and waits for the line that says it took it (a line logged after the signal). */
async function signalled(pid: number, signal: NodeJS.Signals, log: LineLog<PeerEvent>, event: string): Promise<void> {
  const from = log.entries.length;
  process.kill(pid, signal);
  await log.waitFor((entry) => entry.event === event, 10_000, `the peer ${event}`, from);
}
