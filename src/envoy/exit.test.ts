import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyExit, configRefusal } from './exit.ts';
import { RecentErrors } from './output.ts';
import { envoyReason } from './validate.ts';

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
    [[{ exitCode: 1, isCanceled: false, failed: true }, recent(), true], 'aborted'],
    [[{ signal: 'SIGTERM', isCanceled: true, failed: true }, recent(), false], 'aborted'],
    [[{ exitCode: 0, isCanceled: false, failed: false }, recent('previous envoy process is still initializing'), false], 'normal'],
  ];
  for (const [args, kind] of cases) assert.equal(classifyExit(...args).kind, kind);
  assert.equal(classifyExit({ signal: 'SIGKILL', isCanceled: false, failed: true }, recent('boom'), false).detail, 'signal SIGKILL: boom');
});

test('classifyExit: a forced kill (SIGTERM went unanswered, execa sent SIGKILL) is told apart from any other stop', () => {
  const forced = classifyExit({ signal: 'SIGKILL', isCanceled: true, failed: true, isForcefullyTerminated: true }, recent('stuck'), true);
  assert.deepEqual(forced, { kind: 'aborted', detail: 'signal SIGKILL (forced: SIGTERM went unanswered): stuck', forced: true });
  assert.deepEqual(classifyExit({ signal: 'SIGTERM', isCanceled: true, failed: true, isForcefullyTerminated: false }, recent(), true), {
    kind: 'aborted',
    detail: 'signal SIGTERM',
  });
  assert.deepEqual(classifyExit({ isCanceled: true, failed: true, isForcefullyTerminated: true }, recent(), false), {
    kind: 'aborted',
    detail: 'signal SIGKILL (forced: SIGTERM went unanswered)',
    forced: true,
  });
  assert.deepEqual(classifyExit({ code: 'ENOENT', isCanceled: false, failed: true }, recent(), false), { kind: 'failed', detail: 'ENOENT' });
  assert.deepEqual(classifyExit({ code: 'ENOENT', exitCode: 3, isCanceled: false, failed: true }, recent(), false), { kind: 'failed', detail: 'exit code 3' });
});

test("Envoy's own \"cannot bind\" is bad input, named by the flag that set the port", () => {
  const ports = { proxyAdminPort: 15000, prometheusPort: 15090, readinessPort: 15021 };
  const failed = { exitCode: 1, isCanceled: false, failed: true };
  const exit = classifyExit(failed, recent("cannot bind '127.0.0.1:15000': Address already in use"), false, ports);
  assert.deepEqual(exit, { kind: 'rejected', detail: "--proxyAdminPort: Envoy cannot bind port 15000 on 127.0.0.1 (Address already in use)" });
  assert.match(classifyExit(failed, recent("cannot bind '0.0.0.0:15090': Address already in use"), false, ports).detail, /^--prometheusPort: .*15090/);
  assert.match(classifyExit(failed, recent("cannot bind '0.0.0.0:8080': Address already in use"), false, ports).detail, /^a listener: .*8080/);
  assert.equal(classifyExit({ signal: 'SIGTERM', isCanceled: true, failed: true }, recent("cannot bind '127.0.0.1:15000': x"), true, ports).kind, 'aborted');
  assert.equal(
    classifyExit(failed, recent("cannot bind '127.0.0.1:15000': x"), false).detail,
    'a listener: Envoy cannot bind port 15000 on 127.0.0.1 (x)',
    'no ports given',
  );
  assert.match(classifyExit(failed, recent("cannot bind '127.0.0.1:15021': in use"), false, ports).detail, /^--readinessPort: /);
  assert.match(
    classifyExit(failed, recent("cannot bind '127.0.0.1:1': x", "cannot bind '127.0.0.1:15000': y"), false, ports).detail,
    /^--proxyAdminPort: .*\(y\)$/,
    'the last such line',
  );
});

test('envoyReason keeps the line that says what is wrong, without the log prefix', () => {
  const output = [
    '[2026-11-21 09:42:35.782][8240][info][main] [source/server/server.cc:1] initializing',
    "[2026-11-21 09:42:35.783][8240][critical][main] [source/server/server.cc:2] error initializing configuration 'x.json': Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT:bad) has unknown fields",
  ].join('\n');
  assert.match(envoyReason(output), /^error initializing configuration 'x.json'/);
  const cases: { name: string; output: string; want: string }[] = [
    {
      name: 'the first line that names a fault, prefix and location gone',
      output: '[t][1][info][main] [a.cc:1] starting\n[t][1][critical][main] [b.cc:2] Unable to parse',
      want: 'Unable to parse',
    },
    { name: 'a prefix without a location', output: '[t][1][critical][main] invalid value', want: 'invalid value' },
    { name: 'each word that names a fault', output: 'ok\nan Exception here', want: 'an Exception here' },
    { name: 'cannot', output: 'fine\nit cannot', want: 'it cannot' },
    { name: 'unknown', output: 'fine\nunknown field', want: 'unknown field' },
    { name: 'no such word: the first line with text', output: '\n  \nfirst words\nsecond', want: 'first words' },
    { name: 'nothing at all', output: '', want: 'no output' },
    { name: 'a long line is cut at 500', output: `error ${'x'.repeat(600)}`, want: `error ${'x'.repeat(494)}` },
    { name: 'a prefix not at the start stays', output: 'said [t][1][error][main] boom', want: 'said [t][1][error][main] boom' },
  ];
  for (const { name, output: text, want } of cases) assert.equal(envoyReason(text), want, name);
});

test('configRefusal: Envoy refusing its configuration at start, in serve and validate wording', () => {
  const cases: { name: string; detail: string; want: string | undefined }[] = [
    {
      name: 'serve mode (1.40), a bad stats regex',
      detail:
        "exit code 1: error `missing ): (unclosed` initializing config 'goo.gle/debugproto   |   /etc/istio/proxy/envoy-rev0.json' | missing ): (unclosed",
      want: 'missing ): (unclosed',
    },
    {
      name: 'validate wording',
      detail:
        "exit code 1: error initializing configuration '/p/envoy-rev0.json': Protobuf message (type envoy.config.bootstrap.v3.Bootstrap) has unknown fields | next",
      want: 'Protobuf message (type envoy.config.bootstrap.v3.Bootstrap) has unknown fields',
    },
    { name: 'a crash', detail: 'signal SIGSEGV', want: undefined },
    { name: 'shared memory', detail: 'exit code 1: unable to create shared memory region', want: undefined },
    { name: 'nothing said', detail: 'exit code 1', want: undefined },
    { name: 'a blank reason', detail: "exit code 1: error `  ` initializing config 'x'", want: undefined },
    { name: 'the reason trimmed', detail: "exit code 1: error initializing configuration '/p': bad thing  | next", want: 'bad thing' },
  ];
  for (const { name, detail, want } of cases) assert.equal(configRefusal(detail), want, name);
});
