import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../test/support/sync-deadline.ts';
import { encodeVarint } from './proto-wire.ts';

describe('encodeVarint', () => {
  it('encodes seven bits a byte, low first', () => {
    assert.deepEqual([...encodeVarint(0)], [0]);
    assert.deepEqual([...encodeVarint(300)], [0xac, 0x02]);
    assert.deepEqual([...encodeVarint(2 ** 40)], [0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
  });

  it('refuses what no varint holds (NaN and Infinity would loop forever), naming the value', () => {
    for (const value of [Number.NaN, Infinity, -1])
      assert.throws(() => encodeVarint(value), new RegExp(`^RangeError: a varint holds a finite number >= 0, not ${value}$`));
  });
});
