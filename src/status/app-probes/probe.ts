import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { AppProbe, ProbeAction } from './config.ts';
import { checkGrpcHealth } from './grpc-health.ts';
import { http, https } from '../../shared/node-http.ts';
import { followRedirects, type HopAnswer } from './redirects.ts';
import { timeoutSignal } from '../../shared/clock.ts';

/** The verdict the kubelet sees: the app's own status for HTTP, 200 or 500 otherwise. */
export interface ProbeVerdict {
  status: number;
  reason: string;
}

/**
 * Runs one configured probe against the app, bounded by its timeout and by
 * the kubelet's request (`signal`). Never throws: a failure is a 500.
 */
export async function runProbe(probe: AppProbe, signal?: AbortSignal): Promise<ProbeVerdict> {
  const timeout = timeoutSignal(probe.timeoutMs);
  const bounded = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    return await runAction(probe.action, bounded);
  } catch (error) {
    const reason = timeout.aborted ? `timed out after ${probe.timeoutMs} ms` : (error as Error).message;
    return { status: 500, reason: `${probe.action.kind} probe failed: ${reason}` };
  }
}

function runAction(action: ProbeAction, signal: AbortSignal): Promise<ProbeVerdict> {
  switch (action.kind) {
    case 'http': return httpProbe(action, signal);
    case 'tcp': return tcpProbe(action, signal).then(() => ({ status: 200, reason: 'tcp connect succeeded' }));
    case 'grpc': return checkGrpcHealth(action, signal).then((serving) => serving
      ? { status: 200, reason: 'grpc health: SERVING' }
      : { status: 500, reason: 'grpc health: not SERVING' });
  }
}

/** The app's status after same-host redirects, as the kubelet sees it. */
async function httpProbe(action: Extract<ProbeAction, { kind: 'http' }>, signal: AbortSignal): Promise<ProbeVerdict> {
  const status = await followRedirects(action, (hop) => httpGet(hop, signal));
  return { status, reason: `app answered ${status}` };
}

/** One GET with the configured headers; certificates are not checked (as the kubelet). */
function httpGet(action: Extract<ProbeAction, { kind: 'http' }>, signal: AbortSignal): Promise<HopAnswer> {
  const request = action.scheme === 'https' ? https.request : http.request;
  const headers: Record<string, string> = { 'user-agent': 'kube-probe (pilot-agent)', accept: '*/*' };
  for (const [name, value] of action.headers) headers[name.toLowerCase()] = value;
  return new Promise((resolve, reject) => {
    const outgoing = request({
      host: action.host, port: action.port, path: action.path, method: 'GET', headers, signal,
      rejectUnauthorized: false, agent: false,
    }, (response: IncomingMessage) => {
      response.resume();
      response.once('end', () => resolve({ status: response.statusCode ?? 500, location: response.headers.location }));
      response.once('error', reject);
    });
    outgoing.once('error', reject);
    outgoing.end();
  });
}

function tcpProbe(action: Extract<ProbeAction, { kind: 'tcp' }>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: action.host, port: action.port, signal });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}
