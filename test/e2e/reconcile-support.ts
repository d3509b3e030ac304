import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume, type KeyPair, type TestCa } from '../support/certs.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { pollUntil } from '../support/poll.ts';

/**
 * An HTTPS listener whose certificate Envoy reads from the watched cert dir at
 * start: cert-chain.pem and key.pem, or other names (a gateway's tls.crt/tls.key).
 */
export function httpsService(options: { listenerPort: number; upstreamPort: number; certDir: string; files?: { chain: string; key: string } }): unknown[] {
  const files = options.files ?? { chain: 'cert-chain.pem', key: 'key.pem' };
  const listener = httpListener('https_0', options.listenerPort, 'local_route') as { filter_chains: Record<string, unknown>[] };
  listener.filter_chains[0]!.transport_socket = {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
      common_tls_context: {
        tls_certificates: [
          { certificate_chain: { filename: join(options.certDir, files.chain) }, private_key: { filename: join(options.certDir, files.key) } },
        ],
      },
    },
  };
  return [listener, routeConfig('local_route', [{ prefix: '/', cluster: 'upstream' }]), edsCluster('upstream'), endpoints('upstream', options.upstreamPort)];
}

/** What a TLS handshake with a server saw: the certificate's serial, or why there was none. */
export type ServedCertificate = { serial: string; error?: undefined } | { serial?: undefined; error: string };

/** One handshake; a refused or failed connection, or no certificate, is an `error`, never a serial. */
export function readServedSerial(port: number): Promise<ServedCertificate> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      resolve(serial ? { serial: BigInt(`0x${serial}`).toString(16).toUpperCase() } : { error: 'no certificate presented' });
      socket.end();
    });
    socket.setTimeout(3000, () => socket.destroy(new Error('timeout')));
    socket.on('error', (error) => resolve({ error: error.message }));
  });
}

/**
 * The serial of the certificate a TLS server presents. Throws when it presents
 * none, so "the serial did not change" cannot pass when Envoy serves nothing.
 */
export async function servedSerial(port: number): Promise<string> {
  const served = await readServedSerial(port);
  if (served.error !== undefined) throw new Error(`port ${port} presents no certificate: ${served.error}`);
  return served.serial;
}

/** Polls until the server presents the certificate with this serial. */
export async function waitForSerial(port: number, serial: string, timeoutMs = 20_000): Promise<void> {
  await pollUntil(() => readServedSerial(port), {
    what: `port ${port} to present serial ${serial}`,
    timeoutMs,
    accept: (served) => served.serial === serial,
    show: (served) => String(served.serial ?? served.error),
  });
}

/** Waits for the agent to log that `epoch` is LIVE. */
export function epochLive(agent: RunningAgent, epoch: number, timeoutMs = 30_000) {
  return agent.log.waitFor((entry) => entry.msg === 'epoch live' && entry.epoch === epoch, timeoutMs, `epoch ${epoch} LIVE`);
}

/** Everything a TLS rotation test needs: CA, cert dir (a secret volume), upstream, peer, agent. */
export interface TlsRig {
  ca: TestCa;
  certDir: string;
  /** The leaf written before the agent started. */
  initial: KeyPair;
  listenerPort: number;
  upstream: Upstream;
  peer: Peer;
  agent: RunningAgent;
  /** Issues a new leaf and writes it the Kubernetes way; returns it. */
  rotate(): Promise<KeyPair>;
  close(): Promise<void>;
}

export async function startTlsRig(agentArgs: string[] = [], env?: Record<string, string>): Promise<TlsRig> {
  const ca = await makeCa();
  // Undone in reverse when a later step fails, so a failed start leaks nothing.
  const undo: (() => Promise<unknown>)[] = [() => ca.close()];
  try {
    const certDir = await mkdtemp(join(tmpdir(), 'rig-certs-'));
    undo.push(() => rm(certDir, { recursive: true, force: true }));
    const rotate = async () => {
      const pair = await ca.issue('localhost');
      await writeSecretVolume(certDir, sidecarFiles(ca, pair));
      return pair;
    };
    const initial = await rotate();
    const upstream = await startUpstream('hello over tls');
    undo.push(() => upstream.close());
    const listenerPort = await freePort();
    const peer = await startPeer(httpsService({ listenerPort, upstreamPort: upstream.port, certDir }));
    undo.push(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--certDir', certDir, '--certDebounce', '100ms', ...agentArgs], env });
    const close = async () => {
      try {
        await agent.stop('SIGTERM');
      } finally {
        await Promise.all([peer.stop(), upstream.close(), ca.close(), rm(certDir, { recursive: true, force: true })]);
      }
    };
    return { ca, certDir, initial, listenerPort, upstream, peer, agent, rotate, close };
  } catch (error) {
    for (const step of undo.reverse()) await step().catch(() => undefined);
    throw error;
  }
}

/** An "Envoy" that passes validation and --version, then always crashes. */
export async function writeCrashingEnvoy(dir: string): Promise<string> {
  const path = join(dir, 'crashing-envoy.sh');
  await writeFile(path, [
    '#!/bin/sh',
    'case "$*" in',
    '  *--version*) echo "envoy  version: 0000/1.40.0/Clean/RELEASE/BoringSSL"; exit 0 ;;',
    '  *validate*) exit 0 ;;',
    'esac',
    'echo "[2026-01-01 00:00:00.000][1][critical][main] stub envoy: crashing on purpose" >&2',
    'exit 3',
    '',
  ].join('\n'));
  await chmod(path, 0o755);
  return path;
}

/** The parent pid of a process: the agent, for an Envoy it started. */
export async function parentPid(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
}
