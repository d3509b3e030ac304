import assert from 'node:assert/strict';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { startStatusRig, type StatusRig } from '../../test/support/status-server-rig.ts';
import type { StatusDeps } from './handler.ts';
import { pipelineDepth } from './pipeline.ts';
import type { StatusServer } from './server.ts';

/** Readiness checks that wait for `release`, counting how many run at once. */
function heldReadiness() {
  const held = { running: 0, most: 0, started: 0, release: () => undefined as void };
  let gate = new Promise<void>((resolve) => (held.release = resolve));
  const check = async () => {
    held.started++;
    held.most = Math.max(held.most, ++held.running);
    await gate;
    held.running--;
    return { ready: true as const };
  };
  const reopen = () => (gate = new Promise<void>((resolve) => (held.release = resolve)));
  return { held, check, reopen };
}

const request = 'GET /healthz/ready HTTP/1.1\r\nHost: pod\r\n\r\n';
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

describe('the status server: one request at a time per connection, and its close', () => {
  let rig: StatusRig;
  let server: StatusServer;
  let probe: ReturnType<typeof heldReadiness>;
  beforeEach(async () => {
    probe = heldReadiness();
    const deps: StatusDeps = { readiness: { check: probe.check }, agentMetrics: async () => '', epochs: () => ({}), quit: () => undefined, drain: async () => true };
    rig = await startStatusRig(deps, 'status-conns-');
    server = rig.server;
  });
  afterEach(() => rig.close());
  const open = () => rig.connect();

  it('pipelined requests are answered one after the other, never at once, each in turn', async () => {
    const socket = await open();
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.write(request.repeat(8));
    for (let answered = 0; answered < 8; answered++) {
      while (probe.held.started <= answered) await new Promise((resolve) => setImmediate(resolve));
      await settle();
      assert.equal(probe.held.started, answered + 1, 'the next one starts only once the one before is answered');
      probe.held.release();
      probe.reopen();
    }
    while ((received.match(/HTTP\/1\.1 200 /g) ?? []).length < 8) await once(socket, 'data');
    assert.equal(probe.held.most, 1);
  });

  it(`a connection pipelining more than ${pipelineDepth} behind the one answered is closed, and the waiting ones never start`, async () => {
    const socket = await open();
    const closed = once(socket, 'close');
    socket.write(request.repeat(pipelineDepth + 2));
    await closed;
    probe.held.release();
    await settle();
    assert.equal(probe.held.started, 1);
  });

  it('the waiting requests of a connection that closes are dropped', async () => {
    const socket = await open();
    socket.write(request.repeat(4));
    while (probe.held.started === 0) await new Promise((resolve) => setImmediate(resolve));
    socket.destroy();
    await settle();
    probe.held.release();
    await settle();
    assert.equal(probe.held.started, 1);
  });

  it('close ends every connection, one with a half-sent request too: nothing is answered on it after', async () => {
    const socket = await open();
    let answered = false;
    socket.on('data', () => (answered = true));
    socket.write('GET /healthz/ready HTTP/1.1\r\nHost: pod\r\n');
    await settle();
    const closing = server.close();
    probe.held.release();
    // The rest of the request: a server that kept the connection would now answer it.
    socket.write('\r\n');
    await once(socket, 'close');
    await closing;
    assert.equal(answered, false);
  });
});
