import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import type { RunningAgent } from './agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume, type KeyPair, type TestCa } from './certs.ts';
import { tempDir } from './cleanup.ts';
import type { Peer } from './peer.ts';
import { pollUntil } from './poll.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from './resources.ts';
import { startRig, type Rig } from './rig.ts';
import type { Upstream } from './upstream.ts';

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
export interface TlsRig extends Rig {
  ca: TestCa;
  certDir: string;
  /** The leaf written before the agent started. */
  initial: KeyPair;
  upstream: Upstream;
  peer: Peer;
  /** Issues a new leaf and writes it the Kubernetes way; returns it. */
  rotate(): Promise<KeyPair>;
}

/** A CA, a watched cert dir (a secret volume) and Envoy serving HTTPS with the files it holds. */
export async function startTlsRig(agentArgs: string[] = [], env?: Record<string, string>): Promise<TlsRig> {
  await using undo = new AsyncDisposableStack();
  const ca = await makeCa();
  undo.defer(() => ca.close());
  const certDir = await tempDir(undo, 'rig-certs-');
  const rotate = async () => {
    const pair = await ca.issue('localhost');
    await writeSecretVolume(certDir, sidecarFiles(ca, pair));
    return pair;
  };
  const initial = await rotate();
  const rig = await startRig(undo, {
    upstreamBody: 'hello over tls',
    discovery: { resources: (ports) => httpsService({ listenerPort: ports.listenerPort, upstreamPort: ports.upstreamPort, certDir }) },
    agent: { args: ['--certDir', certDir, '--certDebounce', '100ms', ...agentArgs], env },
  });
  return { ...rig, peer: rig.peer!, upstream: rig.upstream!, ca, certDir, initial, rotate };
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
