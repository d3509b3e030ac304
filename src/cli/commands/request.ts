import { Command, InvalidArgumentError } from 'commander';
import { AgentError, ExitCode } from '../../shared/errors.ts';
import { timeoutSignal } from '../../shared/clock.ts';
import type { CommandContext } from '../context.ts';

/** Istio's client timeout for one request. */
const requestTimeoutMs = 60_000;

const port = (text: string) => {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value === 0 || value > 65535) throw new InvalidArgumentError('not a port (1-65535)');
  return value;
};

/**
 * `pilot-agent request <METHOD> <path> [body]`: one call to Envoy's admin API
 * on `localhost` as Istio's makes it: 127.0.0.1, else ::1 (admin's address in
 * an IPv6-only pod), whatever /etc/hosts says. Prints the response body raw
 * and nothing else; a non-2xx answer still prints its body, then exits 1.
 */
export function requestCommand(context: CommandContext): Command {
  return new Command('request')
    .description("Send an HTTP request to Envoy's admin API and print the response body")
    .argument('<method>', 'HTTP method, e.g. GET or POST')
    .argument('<path>', 'admin path, e.g. /stats or /config_dump')
    .argument('[body]', 'request body')
    .option('--debug-port <port>', 'Envoy admin port', port, 15000)
    .action(async (method: string, path: string, body: string | undefined, flags: { debugPort: number }) => {
      const target = `${path.startsWith('/') ? '' : '/'}${path}`;
      const response = await sendToLoopback((host) => `http://${host}:${flags.debugPort}${target}`, method.toUpperCase(), body);
      context.stdout.write(response.body);
      if (response.status < 200 || response.status > 299) context.exitCode = ExitCode.runtime;
    });
}

/** 127.0.0.1 first; ::1 only when nothing listens there (a refused connection sent nothing, so retrying is safe). */
async function sendToLoopback(url: (host: string) => string, method: string, body: string | undefined): Promise<{ status: number; body: Buffer }> {
  try {
    return await send(url('127.0.0.1'), method, body);
  } catch (error) {
    const cause = (error as Error).cause as { cause?: NodeJS.ErrnoException } | undefined;
    if (cause?.cause?.code !== 'ECONNREFUSED') throw error;
    return send(url('[::1]'), method, body);
  }
}

async function send(url: string, method: string, body: string | undefined): Promise<{ status: number; body: Buffer }> {
  try {
    const response = await fetch(url, {
      method,
      body: body === undefined || method === 'GET' || method === 'HEAD' ? undefined : body,
      signal: timeoutSignal(requestTimeoutMs),
    });
    return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
  } catch (error) {
    const cause = (error as Error).cause ?? error;
    throw new AgentError('ENVOY_FAILED', `cannot reach Envoy admin at ${new URL(url).host}: ${String(cause)}`, { cause: error });
  }
}
