/** Why a relayed stream ended; one label value of the terminations counter. */
export type TerminationReason =
  | 'envoy_closed'
  | 'upstream_closed'
  | 'upstream_error'
  | 'dial_failed'
  | 'bad_envoy_frame'
  | 'bad_upstream_frame'
  | 'relay_stopped'
  | 'handed_over'
  | 'delta_unsupported';

/** How a relayed stream ended, and the status Envoy's stream is closed with. */
export interface Ending {
  reason: TerminationReason;
  status: number;
  details: string;
}

/** How Istio's istiod_/envoy_connection_terminations count an ending. */
export interface IstioTermination {
  side: 'istiod' | 'envoy';
  type: 'cancelled' | 'error';
}

/**
 * Every ending, once: whether a working agent ends streams so (Envoy or the
 * agent closing, a handover, a server without Delta met once), which the log
 * says at info rather than warn; and how Istio's counters count it (the
 * agent's own endings are neither side's).
 */
export const endings: Record<TerminationReason, { expected: boolean; istio?: IstioTermination }> = {
  envoy_closed: { expected: true, istio: { side: 'envoy', type: 'cancelled' } },
  relay_stopped: { expected: true },
  handed_over: { expected: true },
  delta_unsupported: { expected: true },
  upstream_closed: { expected: false, istio: { side: 'istiod', type: 'cancelled' } },
  upstream_error: { expected: false, istio: { side: 'istiod', type: 'error' } },
  bad_upstream_frame: { expected: false, istio: { side: 'istiod', type: 'error' } },
  bad_envoy_frame: { expected: false, istio: { side: 'envoy', type: 'error' } },
  dial_failed: { expected: false },
};
