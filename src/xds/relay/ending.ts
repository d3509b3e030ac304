import type { TerminationReason } from './stats.ts';

/** How a relayed stream ended, and the status Envoy's stream is closed with. */
export interface Ending {
  reason: TerminationReason;
  status: number;
  details: string;
}
