import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { checkGrpcHealth, encodeRequest, servingStatus, type GrpcHealthCheck } from './grpc-health.ts';

describe('grpc health messages', () => {
  it('encodes HealthCheckRequest.service as field 1', () => {
    assert.deepEqual(encodeRequest(''), Buffer.alloc(0));
    assert.deepEqual(encodeRequest('api'), Buffer.from([0x0a, 3, 0x61, 0x70, 0x69]));
    assert.deepEqual(encodeRequest('x'.repeat(200)).subarray(0, 3), Buffer.from([0x0a, 0xc8, 0x01]));
  });
  // Unframed: the gRPC framing (and its refusals) is grpc-js's.
  const cases: [string, Buffer, number][] = [
    ['SERVING', Buffer.from([0x08, 1]), 1],
    ['NOT_SERVING', Buffer.from([0x08, 2]), 2],
    ['an empty message (UNKNOWN)', Buffer.alloc(0), 0],
    ['another field', Buffer.from([0x10, 1]), 0],
  ];
  for (const [name, message, status] of cases) {
    it(`reads ${name}`, () => assert.equal(servingStatus(message), status));
  }
});

/** What the app did with one Check: who asked, for what, with which deadline. */
interface SeenCheck {
  peer: string;
  service: string;
  deadline: number;
}

const identity = (bytes: Buffer) => bytes;
const health: grpc.ServiceDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

/** How the app answers, by the service name asked for. */
const answers: Record<string, (callback: grpc.sendUnaryData<Buffer>) => void> = {
  '': (callback) => callback(null, Buffer.from([0x08, 1])),
  api: (callback) => callback(null, Buffer.from([0x08, 1])),
  down: (callback) => callback(null, Buffer.from([0x08, 2])),
  unknown: (callback) => callback(null, Buffer.alloc(0)),
  missing: (callback) => callback({ code: grpc.status.NOT_FOUND, details: 'no such service' }),
  huge: (callback) => callback(null, Buffer.concat([Buffer.from([0x08, 1, 0x12, 0x80, 0x10]), Buffer.alloc(2048)])),
  silent: () => undefined,
};

describe('checkGrpcHealth: Health/Check through grpc-js, from the probe source address', () => {
  const server = new grpc.Server();
  const seen: SeenCheck[] = [];
  let port: number;

  before(async () => {
    server.addService(health, {
      Check: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        const service = call.request.length > 2 ? call.request.subarray(2).toString() : '';
        seen.push({ peer: call.getPeer(), service, deadline: Number(call.getDeadline()) });
        answers[service]!(callback);
      },
    });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
  });
  after(() => server.forceShutdown());

  const check = (service: string, options: Partial<GrpcHealthCheck> = {}) =>
    checkGrpcHealth({
      action: { kind: 'grpc', host: '127.0.0.1', port, service },
      localAddress: '127.0.0.6',
      timeoutMs: 5000,
      signal: new AbortController().signal,
      ...options,
    });

  it('SERVING is healthy; the call comes from 127.0.0.6, names the service and carries the probe timeout as its deadline', async () => {
    const before = Date.now();
    assert.equal(await check('api'), true);
    const last = seen.at(-1)!;
    assert.match(last.peer, /^127\.0\.0\.6:\d+$/);
    assert.equal(last.service, 'api');
    assert.ok(last.deadline >= before + 4000 && last.deadline <= Date.now() + 5000, `deadline ${last.deadline - before} ms after the call`);
  });

  it('the empty service name asks for the whole server', async () => {
    assert.equal(await check(''), true);
    assert.equal(seen.at(-1)!.service, '');
  });

  it('NOT_SERVING and UNKNOWN are not healthy', async () => {
    assert.equal(await check('down'), false);
    assert.equal(await check('unknown'), false);
  });

  it('a gRPC status other than OK fails the probe with that status', async () => {
    await assert.rejects(check('missing'), (error: grpc.ServiceError) => error.code === grpc.status.NOT_FOUND);
  });

  it('an answer over 1 KiB is refused', async () => {
    await assert.rejects(check('huge'), (error: grpc.ServiceError) => error.code === grpc.status.RESOURCE_EXHAUSTED);
  });

  it('an app that never answers ends at the deadline', async () => {
    await assert.rejects(check('silent', { timeoutMs: 50 }), (error: grpc.ServiceError) => error.code === grpc.status.DEADLINE_EXCEEDED);
  });

  it('the kubelet going away cancels the call', async () => {
    const controller = new AbortController();
    const asked = seen.length;
    const pending = check('silent', { signal: controller.signal });
    while (seen.length === asked) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await assert.rejects(pending, (error: grpc.ServiceError) => error.code === grpc.status.CANCELLED);
  });

  it('nobody listening fails as UNAVAILABLE', async () => {
    const closed = new grpc.Server();
    const deadPort = await new Promise<number>((resolve, reject) =>
      closed.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    closed.forceShutdown();
    await assert.rejects(
      check('api', { action: { kind: 'grpc', host: '127.0.0.1', port: deadPort, service: 'api' } }),
      (error: grpc.ServiceError) => error.code === grpc.status.UNAVAILABLE,
    );
  });
});
