/**
 * Whether `response` answers `query`: a response (QR set) with the query's
 * id and, byte for byte but for letter case (resolvers may echo another
 * case, RFC 1034), the query's first question, name, type and class. A
 * forwarder that takes less (the id alone, or any source) takes spoofed
 * answers: the id is 16 bits, guessed in 65,536 tries.
 */
export function answersQuery(query: Buffer, response: Buffer): boolean {
  if (response.length < 12 || query.length < 12) return false;
  if ((response[2]! & 0x80) === 0 || response.readUInt16BE(0) !== query.readUInt16BE(0)) return false;
  if (response.readUInt16BE(4) < 1) return false;
  const asked = firstQuestion(query);
  const answered = firstQuestion(response);
  return asked !== undefined && asked === answered;
}

/** The first question (lower-case name, type, class) as one string, or undefined when it does not read (a pointer: none is allowed there). */
export function firstQuestion(message: Buffer): string | undefined {
  let at = 12;
  const labels: string[] = [];
  for (;;) {
    if (at >= message.length) return undefined;
    const length = message[at]!;
    if (length === 0) break;
    if (length > 63 || at + 1 + length > message.length) return undefined;
    labels.push(message.toString('latin1', at + 1, at + 1 + length).toLowerCase());
    at += 1 + length;
  }
  if (at + 5 > message.length) return undefined;
  return `${labels.join('.')}/${message.readUInt16BE(at + 1)}/${message.readUInt16BE(at + 3)}`;
}
