import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { gatherFlags, resolveCaptureConfig } from './config.ts';

/** Every flag of istio-iptables is named in its own error (config.test.ts covers the others). */
const resolve = (cli: Record<string, string>) => resolveCaptureConfig(gatherFlags(cli, {}), {});

test('bad -z and -o values and a -x of "*" are usage errors naming the flag', () => {
  const cases: [Record<string, string>, string][] = [
    [{ 'inbound-capture-port': '0' }, '-z: port "0" is not an integer from 1 to 65535'],
    [{ 'istio-local-outbound-ports-exclude': '53,dns' }, '-o: port "dns" is not an integer from 1 to 65535'],
    [{ 'istio-service-exclude-cidr': '*' }, '-x: "*" would exclude everything; leave -i empty instead'],
  ];
  for (const [cli, message] of cases) {
    assert.throws(() => resolve(cli), (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message, message);
  }
});

test('-z and -o values land in the config', () => {
  const config = resolve({ 'inbound-capture-port': '15106', 'istio-local-outbound-ports-exclude': '53, 8125' });
  assert.equal(config.inboundCapturePort, 15106);
  assert.deepEqual(config.excludedOutboundPorts, [53, 8125]);
});
