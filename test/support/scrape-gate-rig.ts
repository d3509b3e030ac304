import { ScrapeGate, type ScrapeGateOptions } from '../../src/status/scrape-gate.ts';
import { handTimers } from './hand-timers.ts';

/**
 * A scrape gate on hand-fired timers, and scrapes through it: each with its
 * verdict once settled (undefined while it waits) and `close` for its answer's end.
 */
export function scrapeGateRig(options: Omit<ScrapeGateOptions, 'timers'>, defaultPeer = '198.18.0.9') {
  const timers = handTimers();
  const gate = new ScrapeGate({ ...options, timers: timers.host });
  const scrape = (peer = defaultPeer) => {
    const answer = new AbortController();
    const entry = { verdict: undefined as boolean | undefined, close: () => answer.abort() };
    void gate.enter(peer, answer.signal).then((verdict) => (entry.verdict = verdict));
    return entry;
  };
  return { gate, timers, scrape };
}

/** Lets the gate's promises settle (no timer involved). */
export const settle = () => new Promise((resolve) => setImmediate(resolve));
