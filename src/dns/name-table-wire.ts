import { FieldScanner, WireError, wireLen } from '../xds/field-scanner.ts';
import { lenField } from '../xds/wire.ts';

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

/** Calls `onField` with every length-delimited field of one whole message; other wire types are skipped. */
export function eachLenField(message: Buffer, onField: (field: number, bytes: Buffer) => void): void {
  const scanner = new FieldScanner({ field: (_field, wireType) => wireType === wireLen, value: onField }, message.length, Infinity);
  scanner.push(message);
  scanner.finish();
}

/** The map entries of a NameTable, undecoded: the caller decodes them in batches. */
export function nameTableEntries(table: Buffer): Buffer[] {
  const entries: Buffer[] = [];
  eachLenField(table, (field, bytes) => {
    if (field === 1) entries.push(bytes);
  });
  return entries;
}

/** One map entry: the host name and its NameInfo. Throws WireError when it does not parse. */
export function readNameEntry(entry: Buffer): [host: string, info: NameInfo] {
  let host = '';
  const info: NameInfo = { ips: [], registry: '', shortname: '', namespace: '', altHosts: [] };
  eachLenField(entry, (field, bytes) => {
    if (field === 1) host = bytes.toString('utf8');
    else if (field === 2) readNameInfo(bytes, info);
  });
  return [host, info];
}

function readNameInfo(bytes: Buffer, into: NameInfo): void {
  eachLenField(bytes, (field, value) => {
    const text = value.toString('utf8');
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
      ...[[2, info.registry], [3, info.shortname], [4, info.namespace]].filter(([, text]) => text).map(([field, text]) => lenField(field as number, text as string)),
      ...(info.altHosts ?? []).map((alt) => lenField(5, alt)),
    ]);
    entries.push(lenField(1, Buffer.concat([lenField(1, host), lenField(2, value)])));
  }
  return Buffer.concat(entries);
}
