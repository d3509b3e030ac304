import type { ProxyExit } from '../agent/proxy.ts';
import { configRefusal } from './exit.ts';
import { rejected, type Verdict } from './validate.ts';

/**
 * When an epoch's bootstrap is put to `--mode validate`, decided from the
 * epoch alone (pure). A hot-restart child that fails its start has already
 * shut its parent's admin down, and then either ends the parent or leaves
 * the chain's shared memory "initializing" for good (Envoy 1.40, both
 * seen): it is validated `before` it is spawned. Epoch 0 has no parent to
 * protect, so Envoy starts at once. A bootstrap with the operator's own
 * parts in it (a custom bootstrap, template or override) is validated
 * `beside` it, niced and off the path to ready, and that verdict decides:
 * validation is stricter than a start (Envoy 1.40 serves with an unknown
 * enum value that `--mode validate` refuses). The agent's own rendering of
 * its built-in template is validated only `afterFailedStart`, to tell a
 * rejected bootstrap (exit 2) from a start a retry may pass: a validation
 * beside every pod's start cost Envoy's CPU (docs/benchmarks.md), on a
 * node where pods start together and wait for CPU.
 */
export interface StartCheckPlan {
  before: boolean;
  beside: boolean;
  afterFailedStart: boolean;
}

/** The plan for one epoch; `operatorParts`: the bootstrap holds what the operator wrote. */
export function planStartChecks(epoch: number, operatorParts: boolean): StartCheckPlan {
  const first = epoch === 0;
  return { before: !first, beside: first && operatorParts, afterFailedStart: first && !operatorParts };
}

/** Which check a verdict came from: its words in the epoch's end. */
export type CheckStep = 'before' | 'certs' | 'beside' | 'after';

/** The end an epoch takes for a check's verdict; undefined when the check passed. */
export function verdictExit(step: CheckStep, epoch: number, verdict: Verdict): ProxyExit | undefined {
  if (verdict.accepted) return undefined;
  if (step === 'before') return { kind: 'rejected', detail: `Envoy rejects the bootstrap of epoch ${epoch}: ${verdict.reason}` };
  if (step === 'certs') return { kind: 'rejected', detail: `Envoy cannot load the certificate files for epoch ${epoch}: ${verdict.reason}` };
  return { kind: 'rejected', detail: verdict.message };
}

/**
 * Whether an epoch's end needs explaining by `--mode validate`: the plan
 * asks for it, and Envoy ended before it went LIVE (even a clean exit,
 * `/bin/true` as --binaryPath, is a start that did not take).
 */
export function needsExplaining(plan: StartCheckPlan, exit: ProxyExit, wentLive: boolean): boolean {
  return plan.afterFailedStart && !wentLive && (exit.kind === 'failed' || exit.kind === 'normal');
}

/**
 * A failed start as Envoy's own words tell it: a configuration Envoy refused
 * at start is rejected with that reason (it fails the same way each time,
 * and `--mode validate` may even pass it: a bad stats regex); undefined when
 * only `--mode validate` can tell.
 */
export function refusedAtStart(exit: ProxyExit, bootstrapPath: string): ProxyExit | undefined {
  const reason = configRefusal(exit.detail);
  return reason === undefined ? undefined : { kind: 'rejected', detail: rejected(bootstrapPath, reason).message };
}
