import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { parseSourceBoundPath, registerSourceAddressResolver, sourceBoundTarget } from './source-address.ts';
import type { GrpcModule } from './load.ts';

type ResolverConstructor = Parameters<typeof grpc.experimental.registerResolver>[1];

/** The resolver class registerSourceAddressResolver hands grpc-js, caught by a stand-in module. */
function capturedResolver(): ResolverConstructor {
  let captured: ResolverConstructor | undefined;
  const module = {
    ...grpc,
    experimental: { ...grpc.experimental, registerResolver: (_scheme: string, resolver: ResolverConstructor) => void (captured = resolver) },
  } as GrpcModule;
  registerSourceAddressResolver(module);
  return captured!;
}

const ticks = () => new Promise((resolve) => setImmediate(resolve));

describe('the pilot-agent-from: resolver', () => {
  const cases: [string, { host: string; port: number; localAddress: string }][] = [
    ['IPv4', { host: '198.18.1.3', port: 8080, localAddress: '127.0.0.6' }],
    ['IPv6', { host: '2001:2::1', port: 9090, localAddress: '::6' }],
  ];
  for (const [name, options] of cases) {
    it(`${name}: the target names the local address and the host:port, and parses back`, () => {
      const uri = grpc.experimental.uriToString({ scheme: 'pilot-agent-from', path: sourceBoundTarget(options).slice('pilot-agent-from:'.length) });
      assert.equal(uri, sourceBoundTarget(options));
      assert.deepEqual(parseSourceBoundPath(sourceBoundTarget(options).slice('pilot-agent-from:'.length), grpc.experimental.splitHostPort), options);
    });
  }

  for (const path of ['198.18.1.3:80', '/198.18.1.3:80', '127.0.0.6/198.18.1.3', '127.0.0.6/', '', '127.0.0.6/[2001:2::1', '127.0.0.6/198.18.1.3:']) {
    it(`refuses the path "${path}"`, () =>
      assert.deepEqual(
        parseSourceBoundPath(path, grpc.experimental.splitHostPort),
        new Error(`pilot-agent-from: target path "${path}" is not localAddress/host:port`),
      ));
  }

  it('answers one address carrying localAddress, once however often asked (pick_first asks again on every failure)', async () => {
    const Resolver = capturedResolver();
    const answers: unknown[] = [];
    const resolver = new Resolver({ scheme: 'pilot-agent-from', path: '127.0.0.6/198.18.1.3:8080' }, (endpoints) => (answers.push(endpoints), true), {});
    for (let i = 0; i < 3; i++) resolver.updateResolution();
    await ticks();
    resolver.updateResolution();
    await ticks();
    assert.deepEqual(answers, [{ ok: true, value: [{ addresses: [{ host: '198.18.1.3', port: 8080, localAddress: '127.0.0.6' }] }] }]);
    assert.equal(Resolver.getDefaultAuthority({ scheme: 'pilot-agent-from', path: '127.0.0.6/198.18.1.3:8080' }), '198.18.1.3:8080');
  });

  it('a bad target resolves to UNAVAILABLE naming it', async () => {
    const Resolver = capturedResolver();
    const answers: { ok: boolean; error?: { code: number; details: string } }[] = [];
    new Resolver({ scheme: 'pilot-agent-from', path: 'nonsense' }, (endpoints) => (answers.push(endpoints as never), true), {}).updateResolution();
    await ticks();
    assert.equal(answers[0]?.error?.code, grpc.status.UNAVAILABLE);
    assert.match(answers[0]!.error!.details, /"nonsense" is not localAddress\/host:port/);
  });
});
