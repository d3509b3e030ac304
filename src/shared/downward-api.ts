/**
 * Kubernetes downward-API files (`/etc/istio/pod/labels`, `annotations`):
 * one `key="value"` per line, the value quoted as Go's %q does. Lines
 * without `=` are skipped, as Istio's agent does.
 */
export function parseDownwardApi(text: string): { ok: true; entries: Record<string, string> } | { ok: false; line: number; reason: string } {
  const entries: Record<string, string> = {};
  const lines = text.split('\n');
  for (const [index, line] of lines.entries()) {
    const equals = line.indexOf('=');
    if (equals < 0) continue;
    const value = unquoteGo(line.slice(equals + 1));
    if (value === undefined) return { ok: false, line: index + 1, reason: 'value is not a double-quoted string' };
    entries[line.slice(0, equals)] = value;
  }
  return { ok: true, entries };
}

const simpleEscapes: Record<string, number> = { a: 0x07, b: 0x08, f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b, '\\': 0x5c, '"': 0x22, "'": 0x27 };
const escapePattern = /\\(?:([abfnrtv\\"'])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{3}))/g;

/** Go's strconv.Unquote for double-quoted strings; undefined when it would fail. */
export function unquoteGo(quoted: string): string | undefined {
  if (quoted.length < 2 || !quoted.startsWith('"') || !quoted.endsWith('"')) return undefined;
  const body = quoted.slice(1, -1);
  // Anything left after removing valid escapes must hold no quote, backslash or newline.
  if (/["\\\n]/.test(body.replace(escapePattern, ''))) return undefined;
  // One buffer, written in place: an escape never decodes to more bytes than
  // it takes. Spreading a value into push() overflowed the stack past ~100 KB.
  const out = Buffer.allocUnsafe(Buffer.byteLength(body, 'utf8'));
  let size = 0;
  let last = 0;
  for (const match of body.matchAll(escapePattern)) {
    const escaped = escapeBytes(match);
    if (!escaped) return undefined;
    size += out.write(body.slice(last, match.index), size, 'utf8'); // an empty slice writes nothing
    for (const byte of escaped) out[size++] = byte;
    last = match.index + match[0].length;
  }
  size += out.write(body.slice(last), size, 'utf8');
  return out.toString('utf8', 0, size);
}

/** \x and octal escapes are raw bytes in Go; the others are characters. */
function escapeBytes(match: RegExpMatchArray): number[] | undefined {
  const [, simple, hex, u4, u8, octal] = match;
  if (simple) return [simpleEscapes[simple]!];
  if (hex) return [Number.parseInt(hex, 16)];
  if (octal) return Number.parseInt(octal, 8) > 0xff ? undefined : [Number.parseInt(octal, 8)];
  const code = Number.parseInt((u4 ?? u8)!, 16);
  if (code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) return undefined;
  return [...Buffer.from(String.fromCodePoint(code), 'utf8')];
}
