import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { emptyIsUnset, hostPort, optionalHostPort, optionalList, workingDirPath } from './settle-values.ts';

const badFlag = (message: string) => (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message;

test('empty values and lists are unset; others are kept', () => {
  assert.equal(emptyIsUnset(''), undefined);
  assert.equal(emptyIsUnset(undefined), undefined);
  assert.equal(emptyIsUnset('/etc/custom.json'), '/etc/custom.json');
  assert.equal(optionalList(''), undefined);
  assert.deepEqual(optionalList('a,b'), ['a', 'b']);
});

// Main now reads paths as Istio does (against the working directory) instead of refusing relative ones.
test('workingDirPath keeps an absolute path and resolves a relative one against the working directory', () => {
  assert.equal(workingDirPath('/var/run/sds.sock'), '/var/run/sds.sock');
  assert.equal(workingDirPath('/var/run/../run/sds.sock'), '/var/run/sds.sock');
  assert.equal(workingDirPath('./var/run/secrets/workload-spiffe-uds/socket'), join(process.cwd(), 'var/run/secrets/workload-spiffe-uds/socket'));
  assert.equal(workingDirPath('run/sds.sock'), join(process.cwd(), 'run/sds.sock'));
});

test('hostPort parses host:port and refuses anything else, naming the flag; empty is unset when optional', () => {
  assert.deepEqual(hostPort('istiod.istio-system.svc:15012', 'discoveryAddress'), { host: 'istiod.istio-system.svc', port: 15012 });
  assert.throws(() => hostPort('istiod', 'discoveryAddress'), badFlag('--discoveryAddress: "istiod" is not host:port'));
  assert.equal(optionalHostPort('', 'zipkinAddress'), undefined);
  assert.deepEqual(optionalHostPort('zipkin:9411', 'zipkinAddress'), { host: 'zipkin', port: 9411 });
  assert.throws(() => optionalHostPort('zipkin:0', 'zipkinAddress'), badFlag('--zipkinAddress: port 0 is out of range (1-65535)'));
});
