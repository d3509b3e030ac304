import * as dnsPacket from 'dns-packet';
import type { Answer, Packet, Question } from 'dns-packet';
import type { LookupTable } from './lookup-table.ts';
import { checkHeader } from './query-header.ts';

export type Protocol = 'udp' | 'tcp';

/** What to do with one query: answer it from the table, forward it, or drop it. */
export type Verdict =
  | { kind: 'answer'; response: Buffer; rcode: keyof typeof rcodes; truncated: boolean }
  | { kind: 'forward'; name: string }
  | { kind: 'drop' };

/** Istio's TTL for every answer it builds. */
export const answerTtlSeconds = 30;
const rcodes = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NOTIMP: 4 } as const;
const minUdpBytes = 512;
/** What the 2-byte length in front of a TCP message can say. */
export const maxTcpMessageBytes = 65_535;
/** The largest UDP payload IPv4 carries (65,535 less the IP and UDP headers): a larger EDNS0 size is taken as this. */
export const maxUdpMessageBytes = 65_507;

export interface AnswerContext {
  /** Undefined until the first table arrived: every query is SERVFAIL, as Istio answers. */
  table: LookupTable | undefined;
  protocol: Protocol;
  /** Picks where a rotation of several addresses starts (headless services spread their clients). */
  rotation: () => number;
  /** Before the first table, forward instead of SERVFAIL (Istio does when it serves port 53 itself as root, without capture). */
  forwardBeforeTable?: boolean;
}

/**
 * Decides one query. Malformed bytes with a readable header get FORMERR,
 * shorter ones and responses are dropped (never answered: no reflection
 * loops). Known names are answered with authority; a known name without
 * the asked family answers NOERROR with no records, never NXDOMAIN (curl's
 * parallel A/AAAA, Istio issue 31250). Everything else is forwarded.
 */
export function answerQuery(message: Buffer, context: AnswerContext): Verdict {
  const header = checkHeader(message);
  if (header === 'drop') return { kind: 'drop' };
  if (header !== 'accept') return fail(message.readUInt16BE(0), header);
  let query: Packet;
  try {
    query = dnsPacket.decode(message);
  } catch {
    return fail(message.readUInt16BE(0), 'FORMERR');
  }
  const question = query.questions?.[0];
  if (!question) return fail(query.id ?? 0, 'FORMERR');
  if (!context.table && context.forwardBeforeTable) return { kind: 'forward', name: question.name };
  if (!context.table) return fail(query.id ?? 0, 'SERVFAIL', query);
  const found = lookup(context.table, question);
  if (!found) return { kind: 'forward', name: question.name };
  const answers = rotate(found, context.rotation);
  return respond(query, { answers, rcode: 'NOERROR', authoritative: true, limit: sizeLimit(query, context.protocol) });
}

/** A refusal; the question is echoed only when the query decoded (FORMERR and NOTIMP answer with the header alone, as Istio's library). */
function fail(id: number, rcode: Exclude<keyof typeof rcodes, 'NOERROR'>, query?: Packet): Verdict {
  return respond(query ?? { id }, { answers: [], rcode, authoritative: false, limit: minUdpBytes });
}

/** SERVFAIL for a query that was forwarded and got no answer (it passed answerQuery, so it decodes and has one question). */
export function serverFailure(message: Buffer): Buffer {
  const verdict = fail(message.readUInt16BE(0), 'SERVFAIL', dnsPacket.decode(message));
  return verdict.kind === 'answer' ? verdict.response : Buffer.alloc(0);
}

/**
 * The records for a name the table knows, or undefined for a name it does not
 * (and for types other than A and AAAA, which Istio forwards too). A wildcard
 * entry (`*.example.com`) answers any name under it with the asked name.
 */
export function lookup(table: LookupTable, question: Question): Answer[] | undefined {
  if (question.type !== 'A' && question.type !== 'AAAA') return undefined;
  let host = `${question.name.toLowerCase()}.`;
  let wildcard = false;
  if (!table.has(host)) {
    const labels = host.split('.').filter(Boolean);
    const match = labels.slice(1).map((_label, at) => `*.${labels.slice(at + 1).join('.')}.`).find((name) => table.has(name));
    if (!match) return undefined;
    host = match;
    wildcard = true;
  }
  const cnames: Answer[] = [];
  const twin = table.get(host)!.cname;
  if (twin) {
    cnames.push({ type: 'CNAME', name: question.name, ttl: answerTtlSeconds, data: trimDot(twin) });
    host = twin;
  }
  const entry = table.get(host);
  const ips = (question.type === 'A' ? entry?.v4 : entry?.v6) ?? [];
  if (ips.length === 0) return [];
  const owner = !wildcard ? trimDot(host) : cnames.length > 0 ? trimDot(host) : question.name;
  return [...cnames, ...ips.map((ip) => ({ type: question.type, name: owner, ttl: answerTtlSeconds, data: ip }) as Answer)];
}

const trimDot = (name: string) => (name.endsWith('.') ? name.slice(0, -1) : name);

/** Addresses start at a rotating offset; a CNAME stays in front. */
function rotate(answers: Answer[], rotation: () => number): Answer[] {
  const cnames = answers.filter((answer) => answer.type === 'CNAME');
  const addresses = answers.filter((answer) => answer.type !== 'CNAME');
  if (addresses.length < 2) return answers;
  const start = rotation() % addresses.length;
  return [...cnames, ...addresses.slice(start), ...addresses.slice(0, start)];
}

/** TCP: the 64 KiB a message can be; UDP: the client's EDNS0 size, at least 512, at most what a datagram carries. */
export function sizeLimit(query: Packet, protocol: Protocol): number {
  if (protocol === 'tcp') return maxTcpMessageBytes;
  const opt = query.additionals?.find((record) => record.type === 'OPT');
  const advertised = opt && 'udpPayloadSize' in opt ? opt.udpPayloadSize : 0;
  return Math.min(Math.max(advertised, minUdpBytes), maxUdpMessageBytes);
}

interface Reply {
  answers: Answer[];
  rcode: keyof typeof rcodes;
  authoritative: boolean;
  /** Bytes the response may take; records are dropped from the end past it, and TC set. */
  limit: number;
}

function respond(query: Packet, reply: Reply): Verdict {
  const queryFlags = query.flags ?? 0;
  const flags =
    (queryFlags & (dnsPacket.RECURSION_DESIRED | dnsPacket.CHECKING_DISABLED)) |
    dnsPacket.RECURSION_AVAILABLE |
    (reply.authoritative ? dnsPacket.AUTHORITATIVE_ANSWER : 0) |
    rcodes[reply.rcode];
  const edns = query.additionals?.some((record) => record.type === 'OPT');
  // Only the first question: the answer never echoes what a client piled up (the header check lets one through anyway).
  const opt: Answer = { type: 'OPT', name: '.', udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] };
  const packet: Packet = {
    id: query.id ?? 0,
    type: 'response',
    flags,
    questions: (query.questions ?? []).slice(0, 1),
    answers: reply.answers,
    additionals: edns ? [opt] : [],
  };
  let response = dnsPacket.encode(packet);
  let truncated = false;
  if (response.length > reply.limit) {
    truncated = true;
    packet.flags = flags | dnsPacket.TRUNCATED_RESPONSE;
    packet.answers = fitAnswers(packet, reply.limit);
    response = dnsPacket.encode(packet);
  }
  // One question of at most 255 bytes and no records always fit 512; this only guards the transport's limit.
  if (response.length > reply.limit) return fail(packet.id ?? 0, 'SERVFAIL');
  return { kind: 'answer', response, rcode: reply.rcode, truncated };
}

/** The longest prefix of the answers that fits `limit` bytes (found by halving). */
function fitAnswers(packet: Packet, limit: number): Answer[] {
  const all = packet.answers ?? [];
  let low = 0;
  let high = all.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (dnsPacket.encodingLength({ ...packet, answers: all.slice(0, middle) }) <= limit) low = middle;
    else high = middle - 1;
  }
  return all.slice(0, low);
}
