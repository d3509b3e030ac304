import assert from 'node:assert/strict';
import { test } from '../../test/support/sync-deadline.ts';
import { frame, FrameTooLarge, GrpcFrameReader } from './grpc-frame.ts';

/** Edges of grpc-frame.test.ts that mutation testing showed untested. */
function reader(maxLength = 100) {
  const events: (string | Buffer)[] = [];
  const frames = new GrpcFrameReader(
    { begin: (length) => events.push(`begin ${length}`), data: (bytes) => events.push(bytes), end: () => events.push('end') },
    maxLength,
  );
  return { frames, events };
}

test('an empty message ends at once, also as the last thing on the stream, with no data event', () => {
  const { frames, events } = reader();
  frames.push(frame(Buffer.alloc(0)));
  assert.deepEqual(events, ['begin 0', 'end']);
  assert.equal(frames.atBoundary, true);
});

test('a DATA chunk that is all body is handed over as it is, not copied or re-sliced', () => {
  const { frames, events } = reader();
  frames.push(frame(Buffer.from('hello')).subarray(0, 5));
  const body = Buffer.from('hello');
  frames.push(body);
  assert.equal(events[1], body);
  assert.deepEqual(events.slice(2), ['end']);
});

test('a message over the limit is a FrameTooLarge, named so', () => {
  const { frames } = reader(4);
  assert.throws(() => frames.push(frame(Buffer.from('hello'))), (error: unknown) => error instanceof FrameTooLarge && error.name === 'FrameTooLarge');
});
