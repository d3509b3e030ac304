import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyExit } from './envoy-proxy.ts';
import { RecentErrors } from './output.ts';
import { rejectionReason } from './validate.ts';

const recent = (...lines: string[]) => {
  const errors = new RecentErrors();
  for (const line of lines) errors.add(line);
  return errors;
};

test('classifyExit sorts exits into the kinds the reconcile loop tells apart', () => {
  const cases: [Parameters<typeof classifyExit>, string][] = [
    [[{ exitCode: 0, isCanceled: false, failed: false }, recent(), false], 'normal'],
    [[{ signal: 'SIGTERM', isCanceled: true, failed: true }, recent(), true], 'aborted'],
    [[{ exitCode: 1, isCanceled: false, failed: true }, recent('unable to bind domain socket'), false], 'failed'],
    [[{ signal: 'SIGKILL', isCanceled: false, failed: true }, recent(), false], 'failed'],
    [[{ exitCode: 1, isCanceled: false, failed: true }, recent('previous envoy process is still initializing'), false], 'parent-initializing'],
  ];
  for (const [args, kind] of cases) assert.equal(classifyExit(...args).kind, kind);
  assert.equal(classifyExit({ signal: 'SIGKILL', isCanceled: false, failed: true }, recent('boom'), false).detail, 'signal SIGKILL: boom');
});

test('rejectionReason keeps the line that says what is wrong, without the log prefix', () => {
  const output = [
    '[2026-11-21 09:42:35.782][8240][info][main] [source/server/server.cc:1] initializing',
    "[2026-11-21 09:42:35.783][8240][critical][main] [source/server/server.cc:2] error initializing configuration 'x.json': Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT:bad) has unknown fields",
  ].join('\n');
  assert.match(rejectionReason(output), /^error initializing configuration 'x.json'/);
});
