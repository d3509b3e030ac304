import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PendingResponses, type PendingResponse } from './pending-responses.ts';

const response = (typeUrl: string, nonce: string, length: number): PendingResponse => ({
  typeUrl,
  version: `v-${nonce}`,
  nonce,
  chunks: [Buffer.alloc(length)],
  length,
});

function rig(options: { limitBytes: number; latestOnly: boolean }) {
  const lost: string[] = [];
  const pending = new PendingResponses({ ...options, onLost: (typeUrl) => void lost.push(typeUrl) });
  return { pending, lost };
}

describe('PendingResponses', () => {
  it('fits a response up to the limit, not one byte more', () => {
    const { pending } = rig({ limitBytes: 10, latestOnly: false });
    assert.deepEqual([pending.fits(0), pending.fits(10), pending.fits(11)], [true, true, false]);
  });

  it('settles the answered response: its type\'s older ones go with it, other types and later ones stay', () => {
    const { pending, lost } = rig({ limitBytes: 100, latestOnly: false });
    for (const entry of [response('A', '1', 1), response('B', '2', 2), response('A', '3', 4), response('A', '4', 8), response('B', '5', 16)])
      pending.add(entry);
    assert.equal(pending.bytes, 31);
    assert.equal(pending.settle('A', '9'), undefined, 'no response has that nonce');
    assert.equal(pending.settle('B', '3'), undefined, 'that nonce is another type\'s');
    assert.equal(pending.bytes, 31, 'nothing settled, nothing released');
    assert.equal(pending.settle('A', '3')?.version, 'v-3');
    assert.equal(pending.bytes, 26, 'A 1 and A 3 released');
    assert.equal(pending.settle('A', '1'), undefined, 'an older one went with the answer');
    assert.equal(pending.settle('B', '2')?.nonce, '2');
    assert.equal(pending.settle('A', '4')?.nonce, '4', 'a later one of the type stayed');
    assert.equal(pending.settle('B', '5')?.nonce, '5');
    assert.equal(pending.bytes, 0);
    assert.deepEqual(lost, []);
  });

  it('SotW (latest only): a newer response of a type replaces the one still waiting', () => {
    const { pending, lost } = rig({ limitBytes: 10, latestOnly: true });
    pending.add(response('A', '1', 6));
    pending.add(response('B', '2', 1));
    pending.add(response('A', '3', 7));
    assert.equal(pending.bytes, 8);
    assert.equal(pending.settle('A', '1'), undefined, 'the replaced one is gone');
    assert.equal(pending.settle('A', '3')?.nonce, '3');
    assert.deepEqual(lost, [], 'replaced is not lost: the newer one carries the type');
  });

  it('Delta: every response is held up to the limit; past it the oldest go, their types lost', () => {
    const { pending, lost } = rig({ limitBytes: 10, latestOnly: false });
    pending.add(response('A', '1', 4));
    pending.add(response('B', '2', 3));
    pending.add(response('A', '3', 3));
    assert.equal(pending.bytes, 10, 'exactly the limit is held');
    assert.deepEqual(lost, []);
    pending.add(response('C', '4', 7));
    assert.deepEqual(lost, ['A', 'B'], 'the oldest, until the rest fits');
    assert.equal(pending.bytes, 10);
    assert.equal(pending.settle('B', '2'), undefined);
    pending.add(response('D', '5', 1));
    assert.deepEqual(lost, ['A', 'B', 'A']);
    assert.equal(pending.bytes, 8);
    assert.equal(pending.settle('A', '3'), undefined);
    assert.equal(pending.settle('D', '5')?.nonce, '5');
    assert.equal(pending.settle('C', '4')?.nonce, '4');
    assert.equal(pending.bytes, 0);
  });
});
