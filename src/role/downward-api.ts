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

const simpleEscapes: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', '"': '"', "'": "'" };
const escapePattern = /\\(?:([abfnrtv\\"'])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{3}))/g;

/** Go's strconv.Unquote for double-quoted strings; undefined when it would fail. */
export function unquoteGo(quoted: string): string | undefined {
  if (quoted.length < 2 || !quoted.startsWith('"') || !quoted.endsWith('"')) return undefined;
  const body = quoted.slice(1, -1);
  // Anything left after removing valid escapes must hold no quote, backslash or newline.
  if (/["\\\n]/.test(body.replace(escapePattern, ''))) return undefined;
  const bytes: number[] = [];
  let last = 0;
  for (const match of body.matchAll(escapePattern)) {
    const escaped = escapeBytes(match);
    if (!escaped) return undefined;
    bytes.push(...Buffer.from(body.slice(last, match.index), 'utf8'), ...escaped);
    last = match.index + match[0].length;
  }
  bytes.push(...Buffer.from(body.slice(last), 'utf8'));
  return Buffer.from(bytes).toString('utf8');
}

/** \x and octal escapes are raw bytes in Go; the others are characters. */
function escapeBytes(match: RegExpMatchArray): number[] | undefined {
  const [, simple, hex, u4, u8, octal] = match;
  if (simple) return [...Buffer.from(simpleEscapes[simple]!, 'utf8')];
  if (hex) return [Number.parseInt(hex, 16)];
  if (octal) return Number.parseInt(octal, 8) > 0xff ? undefined : [Number.parseInt(octal, 8)];
  const code = Number.parseInt((u4 ?? u8)!, 16);
  if (code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) return undefined;
  return [...Buffer.from(String.fromCodePoint(code), 'utf8')];
}
