/**
 * What the header alone says about a message, before any of it is decoded:
 * the checks of Istio's DNS library (miekg/dns's default accept function).
 * A query asks exactly one question: one with 10,000 would be decoded, and
 * echoed in the answer, for nothing (Istio answers the first question only,
 * and its library refuses any other count with FORMERR before that).
 */
export type HeaderVerdict = 'accept' | 'drop' | 'FORMERR' | 'NOTIMP';

export const headerBytes = 12;
const opcodeQuery = 0;
const opcodeNotify = 4;

export function checkHeader(message: Buffer): HeaderVerdict {
  // Too short to answer, or a response: never answered (no reflection loops).
  if (message.length < headerBytes || (message[2]! & 0x80) !== 0) return 'drop';
  const opcode = (message[2]! >> 3) & 0x0f;
  if (opcode !== opcodeQuery && opcode !== opcodeNotify) return 'NOTIMP';
  const [questions, answers, authorities, additionals] = [4, 6, 8, 10].map((at) => message.readUInt16BE(at)) as [number, number, number, number];
  // NOTIFY may carry one SOA, IXFR one authority, EDNS0 and TSIG two additionals; more is no query this server answers.
  if (questions !== 1 || answers > 1 || authorities > 1 || additionals > 2) return 'FORMERR';
  return 'accept';
}
