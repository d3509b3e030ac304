import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lenField } from '../grpc/proto-wire.ts';
import { encodeNameTable, entryAt, nameTableEntries, nameTableEntriesAt, readNameEntry, WireError, type NameInfo } from './name-table-wire.ts';

const full: NameInfo = { ips: ['198.18.0.1', '2001:2::1'], registry: 'Kubernetes', shortname: 'db', namespace: 'data', altHosts: ['db.data', 'db.data.svc'] };
const bare: NameInfo = { ips: [], registry: '', shortname: '', namespace: '', altHosts: [] };
/** A varint field (wire type 0): field 3, value 150. */
const varintField = Buffer.from([3 * 8, 0x96, 0x01]);

describe('the NameTable wire format', () => {
  it('reads back every field it writes, entries in order', () => {
    const table = encodeNameTable([['db.data.svc.cluster.local', full], ['bare.test', {}]]);
    assert.deepEqual([...nameTableEntries(table)].map(readNameEntry), [['db.data.svc.cluster.local', full], ['bare.test', bare]]);
  });

  it('reads an entry without a host as the empty name', () => {
    assert.deepEqual(readNameEntry(lenField(2, lenField(1, '198.18.0.1'))), ['', { ...bare, ips: ['198.18.0.1'] }]);
  });

  it('leaves empty strings out of the bytes, as protobuf does', () => {
    assert.deepEqual(
      encodeNameTable([['a.test', { registry: '', shortname: '', namespace: '' }]]),
      lenField(1, Buffer.concat([lenField(1, 'a.test'), lenField(2, Buffer.alloc(0))])),
    );
  });

  it('skips fields it does not know, in the table, the entry and the info', () => {
    const info = Buffer.concat([lenField(1, '198.18.0.1'), lenField(9, 'future'), varintField, lenField(2, 'External')]);
    const entry = Buffer.concat([lenField(7, 'ignored'), lenField(1, 'a.test'), varintField, lenField(2, info)]);
    const table = Buffer.concat([lenField(2, 'not an entry'), varintField, lenField(1, entry)]);
    assert.deepEqual([...nameTableEntries(table)].map(readNameEntry), [['a.test', { ...bare, ips: ['198.18.0.1'], registry: 'External' }]]);
  });

  it('gives each entry with where it starts, and entryAt reads it again there', () => {
    const table = Buffer.concat([varintField, encodeNameTable([['a.test', { ips: ['198.18.0.1'] }], ['b.test', {}]])]);
    const entries = [...nameTableEntriesAt(table)];
    assert.deepEqual(entries.map(([at]) => at), [3, 3 + entries[0]![1].length + 2]);
    for (const [at, entry] of entries) assert.deepEqual(entryAt(table, at), entry);
    assert.throws(() => entryAt(table, 0), (error: unknown) => error instanceof WireError && /no map entry at byte 0/.test(error.message));
  });

  it('throws WireError for a truncated table or entry, never reads past it', () => {
    const table = encodeNameTable([['a.test', full]]);
    assert.throws(() => [...nameTableEntries(table.subarray(0, table.length - 1))], WireError);
    const [entry] = [...nameTableEntries(table)];
    assert.throws(() => readNameEntry(entry!.subarray(0, entry!.length - 1)), WireError);
  });
});
