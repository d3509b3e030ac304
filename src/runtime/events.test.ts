import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RuntimeEvent } from './events.ts';

describe('RuntimeEvent', () => {
  it('tells every listener every emit until undone; first() is the first emit, also when asked late', async () => {
    const event = new RuntimeEvent<number>();
    const heard: number[] = [];
    const off = event.on((value) => heard.push(value));
    const first = event.first();
    event.emit(1);
    off();
    event.emit(2);
    assert.deepEqual(heard, [1]);
    assert.equal(await first, 1);
    assert.equal(await event.first(), 1, 'the first emit, not the last');
  });
});
