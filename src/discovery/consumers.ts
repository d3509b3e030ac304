/**
 * What the relay hands to the rooms that consume parts of the discovery
 * stream (Wasm for ECDS, DNS for the name table), so that those rooms
 * depend on these contracts and never on the relay itself.
 */
import type { XdsMode } from './wire.ts';

/** What the agent makes of a whole ECDS response: a replacement, the original (undefined), or a NACK reason. */
export type EcdsOutcome = { message: Buffer | undefined } | { nack: string; nonce: string };

/** The agent's side: one whole ECDS response in, what Envoy gets out; never rejects. */
export type EcdsConverter = (message: Buffer, mode: XdsMode) => Promise<EcdsOutcome>;

/** Where the name tables go: resolves undefined when the table is taken, or why not (a NACK). */
export interface NameTableSink {
  accept(table: Buffer, version: string): Promise<string | undefined>;
}

/** The workload's health as the agent last judged it (ProxyConfig.readinessProbe), for istiod's WorkloadEntry. */
export type HealthReport = { healthy: true } | { healthy: false; message: string };

/** Where each relayed stream takes health reports from (the health room provides it). */
export interface HealthReportSource {
  /** The last report; undefined before the first probe settled. */
  current(): HealthReport | undefined;
  /** Calls `listener` with every later report; returns the unsubscribe. */
  subscribe(listener: (report: HealthReport) => void): () => void;
}
