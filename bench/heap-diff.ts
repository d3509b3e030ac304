// What grew between two V8 heap snapshots (e.g. the ones bench/soak.ts
// --heapsnapshots has an agent write at the end of its idle minute and at the
// end of its churn): objects counted and their own sizes summed per kind
// (constructor or type), the kinds that grew most first. A kind whose count
// climbs with the pushes is what a push leaves behind.
// Run: .tools/bin/node bench/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Count and own bytes per "type:name" (strings by type only: their names are their contents). */
function census(path: string): Map<string, { count: number; bytes: number }> {
  const heap = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const fields = heap.snapshot.meta.node_fields;
  const types = heap.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [number, number, number];
  const kinds = new Map<string, { count: number; bytes: number }>();
  for (let at = 0; at < heap.nodes.length; at += fields.length) {
    const type = types[heap.nodes[at + typeAt]!]!;
    const named = type === 'object' || type === 'native' || type === 'closure' || type === 'code' || type === 'hidden';
    const kind = named ? `${type}:${heap.strings[heap.nodes[at + nameAt]!]!.slice(0, 60)}` : type;
    const entry = kinds.get(kind) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += heap.nodes[at + sizeAt]!;
    kinds.set(kind, entry);
  }
  return kinds;
}

const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '25' } }, allowPositionals: true });
if (positionals.length !== 2) {
  console.error('usage: bench/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot [--top 25]');
  process.exit(2);
}
const [before, after] = positionals.map(census) as [ReturnType<typeof census>, ReturnType<typeof census>];
const rows = [...new Set([...before.keys(), ...after.keys()])].map((kind) => {
  const a = before.get(kind) ?? { count: 0, bytes: 0 };
  const b = after.get(kind) ?? { count: 0, bytes: 0 };
  return { kind, countBefore: a.count, countAfter: b.count, grewBytes: b.bytes - a.bytes };
});
const total = (kinds: ReturnType<typeof census>) => [...kinds.values()].reduce((sum, entry) => sum + entry.bytes, 0);
console.log(`total own bytes: ${total(before)} → ${total(after)}`);
console.table(rows.sort((x, y) => y.grewBytes - x.grewBytes).slice(0, Number(values.top)));
