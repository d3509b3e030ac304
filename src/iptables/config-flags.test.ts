import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { resolveCaptureConfig, type CaptureFlags } from './config.ts';

/** Every flag of istio-iptables is named in its own error (config.test.ts covers the others). */
const base: CaptureFlags = {
  envoyPort: '15001', inboundCapturePort: '15006', proxyUid: '1337', mode: 'REDIRECT', inboundPorts: '',
  excludeInboundPorts: '', includeOutboundCidrs: '*', excludeOutboundCidrs: '', excludeOutboundPorts: '',
};

test('bad -z and -o values and a -x of "*" are usage errors naming the flag', () => {
  const cases: [Partial<CaptureFlags>, string][] = [
    [{ inboundCapturePort: '0' }, '-z: port "0" is not an integer from 1 to 65535'],
    [{ excludeOutboundPorts: '53,dns' }, '-o: port "dns" is not an integer from 1 to 65535'],
    [{ excludeOutboundCidrs: '*' }, '-x: "*" would exclude everything; leave -i empty instead'],
  ];
  for (const [flags, message] of cases) {
    assert.throws(() => resolveCaptureConfig({ ...base, ...flags }), (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message, message);
  }
});

test('-z and -o values land in the config', () => {
  const config = resolveCaptureConfig({ ...base, inboundCapturePort: '15106', excludeOutboundPorts: '53, 8125' });
  assert.equal(config.inboundCapturePort, 15106);
  assert.deepEqual(config.excludedOutboundPorts, [53, 8125]);
});
