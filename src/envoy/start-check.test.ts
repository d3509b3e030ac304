import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProxyExit } from '../agent/proxy.ts';
import { needsExplaining, planStartChecks, refusedAtStart, verdictExit, type CheckStep, type StartCheckPlan } from './start-check.ts';
import { rejected, type Verdict } from './validate.ts';

test('planStartChecks: a hot-restart child before its spawn, an operator bootstrap beside it, the built-in one only after a failed start', () => {
  const cases: { epoch: number; operatorParts: boolean; want: StartCheckPlan }[] = [
    { epoch: 0, operatorParts: false, want: { before: false, beside: false, afterFailedStart: true } },
    { epoch: 0, operatorParts: true, want: { before: false, beside: true, afterFailedStart: false } },
    { epoch: 1, operatorParts: false, want: { before: true, beside: false, afterFailedStart: false } },
    { epoch: 7, operatorParts: true, want: { before: true, beside: false, afterFailedStart: false } },
  ];
  for (const { epoch, operatorParts, want } of cases)
    assert.deepEqual(planStartChecks(epoch, operatorParts), want, `epoch ${epoch}, operator parts ${operatorParts}`);
});

test('verdictExit: one verdict, worded by the check it came from; an accepted one ends nothing', () => {
  const refusal = rejected('/p/envoy-rev3.json', "unknown field 'lisseners'");
  const badFlag: Verdict = { accepted: false, code: 'BAD_FLAG', reason: '--concurrency: Envoy rejects it: x', message: '--concurrency: Envoy rejects it: x' };
  const cases: { step: CheckStep; verdict: Verdict; want: ProxyExit | undefined }[] = [
    { step: 'before', verdict: { accepted: true }, want: undefined },
    { step: 'certs', verdict: { accepted: true }, want: undefined },
    { step: 'beside', verdict: { accepted: true }, want: undefined },
    { step: 'before', verdict: refusal, want: { kind: 'rejected', detail: "Envoy rejects the bootstrap of epoch 3: unknown field 'lisseners'" } },
    { step: 'certs', verdict: refusal, want: { kind: 'rejected', detail: "Envoy cannot load the certificate files for epoch 3: unknown field 'lisseners'" } },
    { step: 'beside', verdict: refusal, want: { kind: 'rejected', detail: "/p/envoy-rev3.json: Envoy rejects the bootstrap: unknown field 'lisseners'" } },
    { step: 'after', verdict: badFlag, want: { kind: 'rejected', detail: '--concurrency: Envoy rejects it: x' } },
  ];
  for (const { step, verdict, want } of cases) assert.deepEqual(verdictExit(step, 3, verdict), want, `${step}: ${JSON.stringify(verdict)}`);
});

test('needsExplaining: only a planned check, and only an end before LIVE that a retry would repeat', () => {
  const explain = planStartChecks(0, false);
  const cases: { plan: StartCheckPlan; kind: ProxyExit['kind']; wentLive: boolean; want: boolean }[] = [
    { plan: explain, kind: 'failed', wentLive: false, want: true },
    { plan: explain, kind: 'normal', wentLive: false, want: true },
    { plan: explain, kind: 'failed', wentLive: true, want: false },
    { plan: explain, kind: 'normal', wentLive: true, want: false },
    { plan: explain, kind: 'aborted', wentLive: false, want: false },
    { plan: explain, kind: 'rejected', wentLive: false, want: false },
    { plan: explain, kind: 'parent-initializing', wentLive: false, want: false },
    { plan: planStartChecks(0, true), kind: 'failed', wentLive: false, want: false },
    { plan: planStartChecks(1, false), kind: 'failed', wentLive: false, want: false },
  ];
  for (const { plan, kind, wentLive, want } of cases)
    assert.equal(needsExplaining(plan, { kind, detail: '' }, wentLive), want, `${JSON.stringify(plan)} ${kind} live=${wentLive}`);
});

test('refusedAtStart: Envoy refusing its config at start is rejected with its words; any other failure is left to --mode validate', () => {
  const refused = refusedAtStart({ kind: 'failed', detail: "exit code 1: error `missing ): (unclosed` initializing config 'x'" }, '/p/envoy-rev0.json');
  assert.deepEqual(refused, { kind: 'rejected', detail: '/p/envoy-rev0.json: Envoy rejects the bootstrap: missing ): (unclosed' });
  assert.equal(refusedAtStart({ kind: 'failed', detail: 'exit code 1: unable to create shared memory region' }, '/p/envoy-rev0.json'), undefined);
});
