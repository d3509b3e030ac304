import { pollUntil } from './poll.ts';
import { startRig, type Rig } from './rig.ts';

export type StatusAgent = Rig;

/** An agent with its status server and Envoy's readiness listener on free ports, on a discovery server the test runs. */
export async function startStatusAgent(discoveryAddress: string, args: string[] = []): Promise<StatusAgent> {
  await using undo = new AsyncDisposableStack();
  return await startRig(undo, { discovery: { address: discoveryAddress }, agent: { args }, waitForStatusServer: true });
}

export interface Answer {
  status: number;
  body: string;
  contentType: string;
}

/** One request to a local port; a refused connection is status 0 with the reason as body. */
export async function get(port: number, path: string, method = 'GET'): Promise<Answer> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { method, signal: AbortSignal.timeout(5000) });
    return { status: response.status, body: await response.text(), contentType: response.headers.get('content-type') ?? '' };
  } catch (error) {
    return { status: 0, body: String((error as Error).cause ?? error), contentType: '' };
  }
}

/** Polls until an answer matches, or fails with the last one seen. */
export async function waitForStatus(port: number, path: string, match: (answer: Answer) => boolean, timeoutMs = 15_000): Promise<Answer> {
  return pollUntil(() => get(port, path), { what: `a matching answer from :${port}${path}`, timeoutMs, accept: match });
}
