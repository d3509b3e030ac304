import { boundedTimer, type TimerHost } from './clock.ts';

/** What a send timeout needs of an HTTP response: Node's ServerResponse has both. */
export interface SentResponse {
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Node's http server bounds how long a request may take to arrive, never how
 * long its response may take to leave: a peer that asks for a large body and
 * never reads holds the connection (and its slot under the cap) for good.
 * So every response of every HTTP listener must be gone within `ms` of being
 * handed over, or it is destroyed with its connection.
 */
export function boundSend(response: SentResponse, ms: number, host?: TimerHost): void {
  const timer = boundedTimer(() => response.destroy(), ms, { unref: true, host });
  response.once('close', () => timer.cancel());
}
