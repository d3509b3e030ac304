import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupPaths, ingressCertDir, watchedCertFiles, watchedCertGroups, type CertGroup } from './cert-files.ts';

test('watchedCertGroups: the chain with its key and the root for every proxy; the ingress pair only for ingress, from its own dir', () => {
  const sidecar: CertGroup[] = [{ cert: '/c/cert-chain.pem', key: '/c/key.pem' }, { cert: '/c/root-cert.pem' }];
  const cases: { name: string; groups: CertGroup[]; want: CertGroup[] }[] = [
    { name: 'sidecar', groups: watchedCertGroups('/c', 'sidecar'), want: sidecar },
    { name: 'router', groups: watchedCertGroups('/c', 'router'), want: sidecar },
    {
      name: 'ingress, default dir',
      groups: watchedCertGroups('/c', 'ingress'),
      want: [...sidecar, { cert: `${ingressCertDir}/tls.crt`, key: `${ingressCertDir}/tls.key` }],
    },
    { name: 'ingress, own dir', groups: watchedCertGroups('/c', 'ingress', '/i'), want: [...sidecar, { cert: '/i/tls.crt', key: '/i/tls.key' }] },
  ];
  for (const { name, groups, want } of cases) assert.deepEqual(groups, want, name);
  assert.equal(ingressCertDir, '/etc/istio/ingress-certs');
});

test('groupPaths and watchedCertFiles: every file, each cert before its key, in the groups\' order', () => {
  assert.deepEqual(groupPaths([{ cert: 'a', key: 'b' }, { cert: 'c' }, { cert: 'd', key: 'e' }]), ['a', 'b', 'c', 'd', 'e']);
  assert.deepEqual(watchedCertFiles('/c', 'ingress', '/i'), ['/c/cert-chain.pem', '/c/key.pem', '/c/root-cert.pem', '/i/tls.crt', '/i/tls.key']);
  assert.deepEqual(watchedCertFiles('/c', 'sidecar'), ['/c/cert-chain.pem', '/c/key.pem', '/c/root-cert.pem']);
});
