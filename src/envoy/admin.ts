/** A small client for Envoy's admin API on 127.0.0.1. Failures are values, not throws. */
export type AdminResult = { ok: true; status: number; body: string } | { ok: false; error: string };

export interface AdminClient {
  get(path: string, signal?: AbortSignal): Promise<AdminResult>;
  post(path: string, signal?: AbortSignal): Promise<AdminResult>;
}

export function adminClient(port: number, timeoutMs = 1000): AdminClient {
  const call = async (method: string, path: string, signal?: AbortSignal): Promise<AdminResult> => {
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      return { ok: true, status: response.status, body: await response.text() };
    } catch (error) {
      return { ok: false, error: (error as Error).cause ? String((error as Error).cause) : String(error) };
    }
  };
  return { get: (path, signal) => call('GET', path, signal), post: (path, signal) => call('POST', path, signal) };
}

/** Envoy's server.state: LIVE once initialized and serving. */
export type ServerState = 'LIVE' | 'DRAINING' | 'PRE_INITIALIZING' | 'INITIALIZING';

/** The server state and restart epoch from /server_info, or undefined when admin is not up. */
export async function serverInfo(admin: AdminClient, signal?: AbortSignal): Promise<{ state: ServerState; epoch: number } | undefined> {
  const result = await admin.get('/server_info', signal);
  if (!result.ok || result.status !== 200) return undefined;
  try {
    const info = JSON.parse(result.body) as { state: ServerState; command_line_options: { restart_epoch?: number } };
    return { state: info.state, epoch: info.command_line_options.restart_epoch ?? 0 };
  } catch {
    return undefined;
  }
}
