import { http } from '../shared/node-http.ts';
import { timeoutSignal } from '../shared/clock.ts';

/** A small client for Envoy's admin API on loopback. Failures are values, not throws. */
export type AdminResult = { ok: true; status: number; body: string } | { ok: false; error: string };

export interface AdminClient {
  get(path: string, signal?: AbortSignal): Promise<AdminResult>;
  post(path: string, signal?: AbortSignal): Promise<AdminResult>;
}

/**
 * One new connection per call (`agent: false`): after a hot restart the
 * port belongs to the child, but a pooled keep-alive connection would keep
 * talking to the draining parent until it exits.
 */
export function adminClient(port: number, options: { host?: string; timeoutMs?: number } = {}): AdminClient {
  // 127.0.0.1 unless the bootstrap put admin on ::1 (an IPv6-only pod, bootstrap/listener-hosts.ts).
  const { host = '127.0.0.1', timeoutMs = 1000 } = options;
  const call = (method: string, path: string, signal?: AbortSignal): Promise<AdminResult> =>
    new Promise((resolve) => {
      const timeout = timeoutSignal(timeoutMs);
      const req = http.request(
        { host, port, path, method, agent: false, signal: signal ? AbortSignal.any([signal, timeout]) : timeout },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ ok: true, status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          response.on('error', (error) => resolve({ ok: false, error: String(error) }));
        },
      );
      req.on('error', (error) => resolve({ ok: false, error: String(error) }));
      req.end();
    });
  return { get: (path, signal) => call('GET', path, signal), post: (path, signal) => call('POST', path, signal) };
}

/** Envoy's server.state: LIVE once initialized and serving. */
export type ServerState = 'LIVE' | 'DRAINING' | 'PRE_INITIALIZING' | 'INITIALIZING';

/** Who answers on admin and how it is, from /server_info. */
export interface ServerInfo {
  state: ServerState;
  epoch: number;
  /** The `-c` bootstrap this Envoy runs with: tells this agent's epochs from anyone else's. */
  configPath: string;
  /** Envoy's build version, e.g. `<sha>/1.40.0/Clean/RELEASE/BoringSSL`. */
  version: string;
}

/** Admin's `/ready`: 200 only when server.state is LIVE (whichever Envoy holds the port). */
export async function isLive(admin: AdminClient, signal?: AbortSignal): Promise<boolean> {
  const result = await admin.get('/ready', signal);
  return result.ok && result.status === 200;
}

/** The server state, restart epoch and bootstrap path from /server_info, or undefined when admin is not up. */
export async function serverInfo(admin: AdminClient, signal?: AbortSignal): Promise<ServerInfo | undefined> {
  const result = await admin.get('/server_info', signal);
  if (!result.ok || result.status !== 200) return undefined;
  try {
    const info = JSON.parse(result.body) as { state: ServerState; version?: string; command_line_options: { restart_epoch?: number; config_path?: string } };
    return {
      state: info.state,
      epoch: info.command_line_options.restart_epoch ?? 0,
      configPath: info.command_line_options.config_path ?? '',
      version: info.version ?? '',
    };
  } catch {
    return undefined;
  }
}
