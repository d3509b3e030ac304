import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { it } from 'node:test';
import { PipelineGate } from './pipeline.ts';

/** A connection that counts its pauses and resumes. */
class CountingSocket extends EventEmitter {
  destroyed = false;
  pauses = 0;
  resumes = 0;
  pause() {
    this.pauses++;
  }
  resume() {
    this.resumes++;
  }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

it('a connection is resumed only after it was paused, and once per pause', () => {
  const gate = new PipelineGate(4);
  const socket = new CountingSocket();
  const alone = new EventEmitter();
  gate.enter(socket, alone, () => undefined);
  alone.emit('close');
  assert.deepEqual([socket.pauses, socket.resumes], [0, 0], 'one request at a time: never paused, never resumed');
  const [first, second, third] = [new EventEmitter(), new EventEmitter(), new EventEmitter()];
  gate.enter(socket, first, () => undefined);
  gate.enter(socket, second, () => undefined);
  first.emit('close');
  second.emit('close');
  assert.deepEqual([socket.pauses, socket.resumes], [1, 1]);
  gate.enter(socket, third, () => undefined);
  third.emit('close');
  assert.deepEqual([socket.pauses, socket.resumes], [1, 1], 'read on already: not resumed again');
});
