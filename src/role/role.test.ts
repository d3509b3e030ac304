import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { resolveRole, serviceNode, type RoleInput } from './role.ts';

const base: RoleInput = { type: 'sidecar', registry: 'Kubernetes', ip: '', id: '', domain: '', pod: {}, findPrivateIp: async () => '10.9.9.9' };
const k8sEnv = { ip: '10.1.2.3', name: 'productpage-v1-54b8', namespace: 'default' };

test('service node per registry, flags over env', async () => {
  const cases: [Partial<RoleInput>, string][] = [
    [{ pod: k8sEnv }, 'sidecar~10.1.2.3~productpage-v1-54b8.default~default.svc.cluster.local'],
    [{ pod: { ...k8sEnv, ip: '' } }, 'sidecar~10.9.9.9~productpage-v1-54b8.default~default.svc.cluster.local'],
    [{ pod: k8sEnv, ip: '10.0.0.1', id: 'x', domain: 'd', type: 'router' }, 'router~10.0.0.1~x~d'],
    [{ registry: 'Consul' }, 'sidecar~10.9.9.9~10.9.9.9.service.consul~service.consul'],
    [{ registry: 'Other' }, 'sidecar~10.9.9.9~10.9.9.9~'],
    [{ registry: 'Other', pod: k8sEnv }, 'sidecar~10.9.9.9~10.9.9.9~'],
    [{ registry: 'Consul', pod: k8sEnv }, 'sidecar~10.9.9.9~10.9.9.9.service.consul~service.consul'],
    [{ registry: 'Other', findPrivateIp: async () => undefined }, 'sidecar~127.0.0.1~127.0.0.1~'],
    [{ registry: 'Other', type: 'ingress', ip: '::1' }, 'router~::1~::1~'],
    [{ registry: 'Other', type: 'router', ip: '::1' }, 'router~::1~::1~'],
    [{ registry: 'Other', type: 'waypoint', ip: '::1' }, 'waypoint~::1~::1~'],
  ];
  for (const [input, expected] of cases) {
    assert.equal(serviceNode(await resolveRole({ ...base, ...input })), expected);
  }
});

test('bad inputs name the flag or env var', async () => {
  const cases: [Partial<RoleInput>, RegExp][] = [
    [{ pod: { ...k8sEnv, name: undefined } }, /^env POD_NAME: is not set/],
    [{ pod: { ...k8sEnv, ip: 'pod-ip' } }, /^env INSTANCE_IP: "pod-ip" is not an IP/],
    [{ registry: 'Other', ip: '1.2.3' }, /^--ip: "1.2.3" is not an IP/],
    [{ registry: 'Other', id: 'a~b' }, /^--id: .* must not contain "~"/],
    [{ registry: 'Other', domain: 'a~b' }, /^--domain: "a~b" must not contain "~"/],
    [{ registry: 'Other', id: 'x', domain: '~' }, /^--domain: /],
  ];
  for (const [input, message] of cases) {
    await assert.rejects(
      resolveRole({ ...base, ...input }),
      (error: unknown) => error instanceof AgentError && error.exitCode === 2 && message.test(error.message),
    );
  }
});
