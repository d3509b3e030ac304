import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { PipelineGate } from './pipeline.ts';

class FakeSocket extends EventEmitter {
  destroyed = false;
  paused = false;
  pause() {
    this.paused = true;
  }
  resume() {
    this.paused = false;
  }
  destroy() {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

const answer = () => new EventEmitter();

describe('PipelineGate: one request at a time per connection', () => {
  it('starts a pipelined request only once the answer before it has closed, in order, and reads on once none waits', () => {
    const gate = new PipelineGate(4);
    const socket = new FakeSocket();
    const started: number[] = [];
    const answers = [answer(), answer(), answer()];
    answers.forEach((each, index) => gate.enter(socket, each, () => started.push(index)));
    assert.deepEqual(started, [0]);
    assert.equal(socket.paused, true, 'not read while requests wait');
    answers[0]!.emit('close');
    assert.deepEqual(started, [0, 1]);
    assert.equal(socket.paused, true, 'one still waits');
    answers[1]!.emit('close');
    assert.deepEqual(started, [0, 1, 2]);
    assert.equal(socket.paused, false, 'the last waiting one started: read on');
    answers[2]!.emit('close');
    const later = answer();
    gate.enter(socket, later, () => started.push(3));
    assert.deepEqual(started, [0, 1, 2, 3], 'a request after the answers is started at once');
  });

  it('connections are independent: one waiting on its answer holds no other back', () => {
    const gate = new PipelineGate(4);
    const started: string[] = [];
    gate.enter(new FakeSocket(), answer(), () => started.push('a'));
    gate.enter(new FakeSocket(), answer(), () => started.push('b'));
    assert.deepEqual(started, ['a', 'b']);
  });

  it('drops the waiting requests when the connection closes', () => {
    const gate = new PipelineGate(4);
    const socket = new FakeSocket();
    const started: number[] = [];
    const first = answer();
    gate.enter(socket, first, () => started.push(0));
    gate.enter(socket, answer(), () => started.push(1));
    gate.enter(socket, answer(), () => started.push(2));
    socket.destroy();
    first.emit('close');
    assert.deepEqual(started, [0]);
  });

  it('closes a connection with more than `depth` requests waiting, and starts none of them', () => {
    const gate = new PipelineGate(2);
    const socket = new FakeSocket();
    const started: number[] = [];
    const first = answer();
    for (let index = 0; index < 3; index++) gate.enter(socket, index === 0 ? first : answer(), () => started.push(index));
    assert.equal(socket.destroyed, false, 'two waiting is within the depth');
    gate.enter(socket, answer(), () => started.push(3));
    assert.equal(socket.destroyed, true);
    first.emit('close');
    assert.deepEqual(started, [0]);
  });
});
