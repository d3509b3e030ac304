import { secretType } from '../../discovery/type-urls.ts';
import { type LastKnownGoodConfig, type LastKnownGoodType } from './config.ts';
import type { XdsMode } from '../../discovery/wire.ts';

/**
 * The last-known-good config as a file: JSON with the protobuf bytes in base64. What
 * is written is what Envoy ACKed, for one node; Secrets (SDS over ADS) are
 * left out: key material never goes to disk.
 */
export const lastKnownGoodFormat = 'pilot-agent/last-known-good/v1';

interface FileType {
  mode: XdsMode;
  typeUrl: string;
  version: string;
  ackedAt: number;
  names: string[];
  response?: string;
  resources?: { name: string; version: string; bytes: string }[];
}

interface LastKnownGoodFileBody {
  format: string;
  node: string;
  writtenAt: number;
  types: FileType[];
}

/** Secrets (SDS over ADS) are kept in memory only: never written to disk. */
export function encodeLastKnownGood(lastKnownGood: LastKnownGoodConfig, node: string, now: number): string {
  const types = (['sotw', 'delta'] as const).flatMap((mode) =>
    lastKnownGood
      .types(mode)
      .filter((entry) => entry.typeUrl !== secretType)
      .map((entry) => fileType(mode, entry)),
  );
  return JSON.stringify({ format: lastKnownGoodFormat, node, writtenAt: now, types } satisfies LastKnownGoodFileBody);
}

function fileType(mode: XdsMode, entry: LastKnownGoodType): FileType {
  const { typeUrl, version, ackedAt, names } = entry;
  if (entry.response) return { mode, typeUrl, version, ackedAt, names, response: Buffer.concat(entry.response).toString('base64') };
  const resources = [...entry.resources!.values()].map((resource) => ({
    name: resource.name,
    version: resource.version,
    bytes: resource.bytes.toString('base64'),
  }));
  return { mode, typeUrl, version, ackedAt, names, resources };
}

export type Decoded = { ok: true; types: { mode: XdsMode; entry: LastKnownGoodType }[]; writtenAt: number } | { ok: false; reason: string };

/** Reads a last-known-good file's text; any doubt (garbage, truncation, another node, too old) is a reason to ignore it. */
export function decodeLastKnownGood(text: string, expect: { node: string; now: number; maxAgeMs: number }): Decoded {
  let body: LastKnownGoodFileBody;
  try {
    body = JSON.parse(text) as LastKnownGoodFileBody;
  } catch (error) {
    // JSON.parse's message quotes the text: a reason never carries the file's content.
    return { ok: false, reason: `not a kept-config file (not JSON: ${(error as Error).name})` };
  }
  if (body?.format !== lastKnownGoodFormat || !Array.isArray(body.types) || typeof body.writtenAt !== 'number')
    return { ok: false, reason: `not a ${lastKnownGoodFormat} file` };
  if (body.node !== expect.node) return { ok: false, reason: 'written for another node' };
  const age = expect.now - body.writtenAt;
  if (age > expect.maxAgeMs) return { ok: false, reason: `written ${Math.round(age / 60_000)} minutes ago, more than the ${expect.maxAgeMs / 60_000} allowed` };
  try {
    return { ok: true, types: body.types.filter((type) => type.typeUrl !== secretType).map(decodeType), writtenAt: body.writtenAt };
  } catch (error) {
    return { ok: false, reason: `malformed entry (${error instanceof LastKnownGoodEntryError ? error.message : 'bad value'})` };
  }
}

/** A malformed entry, said in words of our own (none of the file's). */
class LastKnownGoodEntryError extends Error {}

function decodeType(type: FileType): { mode: XdsMode; entry: LastKnownGoodType } {
  if (type.mode !== 'sotw' && type.mode !== 'delta') throw new LastKnownGoodEntryError('unknown stream kind');
  if (typeof type.typeUrl !== 'string' || typeof type.version !== 'string' || !Array.isArray(type.names))
    throw new LastKnownGoodEntryError('type without typeUrl, version or names');
  const base = { typeUrl: type.typeUrl, version: type.version, ackedAt: Number(type.ackedAt), names: type.names.map(String) };
  if (type.mode === 'sotw') {
    if (typeof type.response !== 'string') throw new LastKnownGoodEntryError('a state-of-the-world type has no response');
    return { mode: 'sotw', entry: { ...base, response: [Buffer.from(type.response, 'base64')] } };
  }
  if (!Array.isArray(type.resources)) throw new LastKnownGoodEntryError('a delta type has no resources');
  const resources = new Map(
    type.resources.map((resource) => [
      String(resource.name),
      { name: String(resource.name), version: String(resource.version), bytes: Buffer.from(String(resource.bytes), 'base64') },
    ]),
  );
  return { mode: 'delta', entry: { ...base, resources } };
}
