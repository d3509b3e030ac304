import { connect } from 'node:net';
import type { AppProbe, ProbeAction } from './config.ts';
import { checkGrpcHealth } from './grpc-health.ts';
import { httpProbeClient, type HttpProbeClient } from './http-client.ts';
import type { ProbeNetwork } from './probe-target.ts';
import { followRedirects } from './redirects.ts';
import { timeoutSignal } from '../../shared/clock.ts';

/** The verdict the kubelet sees: the app's own status for HTTP, 200 or 500 otherwise. */
export interface ProbeVerdict {
  status: number;
  reason: string;
}

/** Runs one configured probe; each keeps its own HTTP client (and, with keep-alive, its connection). */
export type ProbeRunner = (signal?: AbortSignal) => Promise<ProbeVerdict>;

/**
 * The runner of one configured probe against the app, from the probe source
 * address, bounded by its timeout and by the kubelet's request (`signal`).
 * Never throws: a failure is a 500.
 */
export function probeRunner(probe: AppProbe, network: ProbeNetwork): ProbeRunner {
  const client = probe.action.kind === 'http' ? httpProbeClient(network) : undefined;
  return async (signal) => {
    const timeout = timeoutSignal(probe.timeoutMs);
    const bounded = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      return await runAction(probe.action, { signal: bounded, network, client, timeoutMs: probe.timeoutMs });
    } catch (error) {
      const reason = timeout.aborted ? `timed out after ${probe.timeoutMs} ms` : (error as Error).message;
      return { status: 500, reason: `${probe.action.kind} probe failed: ${reason}` };
    }
  };
}

interface RunContext {
  signal: AbortSignal;
  network: ProbeNetwork;
  client?: HttpProbeClient;
  timeoutMs: number;
}

function runAction(action: ProbeAction, context: RunContext): Promise<ProbeVerdict> {
  const { signal, network } = context;
  switch (action.kind) {
    case 'http': return followRedirects(action, (hop) => context.client!.get(hop, signal)).then((status) => ({ status, reason: `app answered ${status}` }));
    case 'tcp': return tcpProbe(action, network.localAddress, signal).then(() => ({ status: 200, reason: 'tcp connect succeeded' }));
    case 'grpc': return checkGrpcHealth({ action, localAddress: network.localAddress, timeoutMs: context.timeoutMs, signal }).then((serving) => serving
      ? { status: 200, reason: 'grpc health: SERVING' }
      : { status: 500, reason: 'grpc health: not SERVING' });
  }
}

function tcpProbe(action: Extract<ProbeAction, { kind: 'tcp' }>, localAddress: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: action.host, port: action.port, localAddress, signal });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}
