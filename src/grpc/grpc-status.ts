/** The gRPC status codes the relay sends or reports (grpc/doc/statuscodes.md). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const names = new Map<number, string>(Object.entries(GrpcStatus).map(([name, code]) => [code, name]));

/** `UNAVAILABLE` for 14; the number itself for a code outside the table. */
export function statusName(code: number): string {
  return names.get(code) ?? String(code);
}

/** grpc-message is percent-encoded: printable ASCII except `%` passes, every other byte is %XX. */
export function encodeGrpcMessage(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeGrpcMessage(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // not valid percent-encoding: show it as sent
  }
}

/** The status a header block carries, if any (trailers, or a Trailers-Only response). */
export function statusFromHeaders(headers: Record<string, string | string[] | undefined>): { code: number; message: string } | undefined {
  const code = headers['grpc-status'];
  if (typeof code !== 'string') return undefined;
  const message = headers['grpc-message'];
  return { code: Number(code), message: typeof message === 'string' ? decodeGrpcMessage(message) : '' };
}
