/**
 * The few DER encodings a certificate request needs (X.690). Enough for a
 * CSR, nothing more: lengths up to 2^32, OIDs from dotted strings. The
 * signing and key export are node:crypto's; certificates are read with its
 * X509Certificate. Kept over node-forge (bench/library-cost.ts, figures in
 * docs/benchmarks.md): forge has no ECDSA keys (P-256 is our default), and
 * an RSA 2048 CSR with it costs more memory and time than here.
 */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(content.length), content]);
}

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
/** A small non-negative INTEGER (versions). */
export const smallInteger = (value: number) => tlv(0x02, Buffer.from([value]));
export const utf8String = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
export const octetString = (bytes: Buffer) => tlv(0x04, bytes);
/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (bytes: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));
/** `[n]` constructed, context-specific. */
export const contextConstructed = (n: number, ...items: Buffer[]) => tlv(0xa0 | n, Buffer.concat(items));
/** `[n]` primitive, context-specific (GeneralName's IA5 choices). */
export const contextPrimitive = (n: number, bytes: Buffer) => tlv(0x80 | n, bytes);

export function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first! + second!];
  for (const arc of rest) bytes.push(...base128(arc));
  return tlv(0x06, Buffer.from(bytes));
}

function base128(value: number): number[] {
  const out = [value % 128];
  for (let rest = Math.floor(value / 128); rest > 0; rest = Math.floor(rest / 128)) out.unshift((rest % 128) | 0x80);
  return out;
}
/** BOOLEAN (DER: TRUE is 0xff). */
export const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
