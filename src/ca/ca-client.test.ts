import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { caFailure } from './ca-client.ts';

const grpcError = (code: number, details: string) => Object.assign(new Error(details), { code, details, metadata: undefined as never });

test('a failed CA call reads as its cause: a CA that resets the stream at its deadline is the deadline, earlier it is a cancel', () => {
  const rows: { code: number; late: boolean; want: string }[] = [
    { code: status.DEADLINE_EXCEEDED, late: true, want: 'DEADLINE_EXCEEDED' },
    { code: status.CANCELLED, late: true, want: 'DEADLINE_EXCEEDED' },
    { code: status.CANCELLED, late: false, want: 'CANCELLED' },
    { code: status.PERMISSION_DENIED, late: true, want: 'PERMISSION_DENIED' },
  ];
  for (const row of rows) {
    const result = caFailure(status, grpcError(row.code, 'Call cancelled'), { timeoutMs: 10_000, late: row.late });
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.code, row.want, `${status[row.code]} late=${row.late}`);
    if (row.want === 'DEADLINE_EXCEEDED') assert.match(!result.ok ? result.message : '', /no answer within 10000 ms/);
  }
});
