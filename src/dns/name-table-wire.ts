import { WireError } from '../grpc/field-scanner.ts';
import { eachLenField, lenField, readField } from '../grpc/proto-wire.ts';

/**
 * The NameTable of Istio's NDS (`pkg/dns/proto/nds.proto`), read and written
 * with the relay's own wire code rather than a protobuf library: five string
 * fields in a map. Field numbers: NameTable.table = 1 (map entry: key 1,
 * value 2); NameInfo: ips 1, registry 2, shortname 3, namespace 4, alt_hosts 5.
 */
export interface NameInfo {
  ips: string[];
  registry: string;
  shortname: string;
  namespace: string;
  altHosts: string[];
}

export { WireError };

/** The map entries of a NameTable, one at a time as views into its bytes, so a caller can read them in batches. */
export function* nameTableEntries(table: Buffer): Generator<Buffer> {
  for (const [, entry] of nameTableEntriesAt(table)) yield entry;
}

/** As nameTableEntries, with where each entry starts: `entryAt(table, at)` reads it again. */
export function* nameTableEntriesAt(table: Buffer): Generator<[at: number, entry: Buffer]> {
  for (let at = 0; at < table.length; ) {
    const { field, len, next } = readField(table, at, table.length);
    if (field === 1 && len) yield [at, table.subarray(len.start, len.end)];
    at = next;
  }
}

/** The map entry starting at `at` of a NameTable that nameTableEntriesAt has read. */
export function entryAt(table: Buffer, at: number): Buffer {
  const { len } = readField(table, at, table.length);
  if (!len) throw new WireError(`no map entry at byte ${at}`);
  return table.subarray(len.start, len.end);
}

/** One map entry: the host name and its NameInfo. Throws WireError when it does not parse. */
export function readNameEntry(entry: Buffer): [host: string, info: NameInfo] {
  let host = '';
  const info: NameInfo = { ips: [], registry: '', shortname: '', namespace: '', altHosts: [] };
  eachLenField(entry, { start: 0, end: entry.length }, (field, start, end) => {
    if (field === 1) host = entry.toString('utf8', start, end);
    else if (field === 2) readNameInfo(entry, { start, end }, info);
  });
  return [host, info];
}

function readNameInfo(bytes: Buffer, range: { start: number; end: number }, into: NameInfo): void {
  eachLenField(bytes, range, (field, start, end) => {
    const text = bytes.toString('utf8', start, end);
    if (field === 1) into.ips.push(text);
    else if (field === 2) into.registry = text;
    else if (field === 3) into.shortname = text;
    else if (field === 4) into.namespace = text;
    else if (field === 5) into.altHosts.push(text);
  });
}

/** Encodes a NameTable (the kept table on disk, tests and the bench). */
export function encodeNameTable(table: Iterable<[string, Partial<NameInfo>]>): Buffer {
  const entries: Buffer[] = [];
  for (const [host, info] of table) {
    const value = Buffer.concat([
      ...(info.ips ?? []).map((ip) => lenField(1, ip)),
      ...[
        [2, info.registry],
        [3, info.shortname],
        [4, info.namespace],
      ]
        .filter(([, text]) => text)
        .map(([field, text]) => lenField(field as number, text as string)),
      ...(info.altHosts ?? []).map((alt) => lenField(5, alt)),
    ]);
    entries.push(lenField(1, Buffer.concat([lenField(1, host), lenField(2, value)])));
  }
  return Buffer.concat(entries);
}
