import { encodeVarint } from '../xds/wire.ts';

/**
 * istio.v1.auth.IstioCertificateRequest / Response on the wire
 * (istio.io/api security/v1alpha1/ca.proto): two small messages, so they
 * are written and read by hand rather than through a protobuf runtime.
 */
export interface CertificateRequest {
  csr: string;
  validitySeconds: number;
}

const field = { csr: 1, validity: 3, certChain: 1 } as const;
const wireVarint = 0;
const wireLen = 2;

const key = (number: number, wireType: number) => encodeVarint((number << 3) | wireType);

export function encodeCertificateRequest(request: CertificateRequest): Buffer {
  const csr = Buffer.from(request.csr, 'utf8');
  return Buffer.concat([
    key(field.csr, wireLen), encodeVarint(csr.length), csr,
    key(field.validity, wireVarint), encodeVarint(request.validitySeconds),
  ]);
}

/** The PEM strings of `cert_chain` (leaf first, root last); other fields are skipped. */
export function decodeCertificateResponse(bytes: Buffer): string[] {
  const chain: string[] = [];
  for (let at = 0; at < bytes.length;) {
    const [tag, afterTag] = readVarint(bytes, at);
    const [fieldNumber, wireType] = [Math.floor(tag / 8), tag % 8];
    if (wireType === wireVarint) {
      at = readVarint(bytes, afterTag)[1];
      continue;
    }
    if (wireType !== wireLen) throw new Error(`unexpected wire type ${wireType} in the CA's answer`);
    const [length, start] = readVarint(bytes, afterTag);
    if (start + length > bytes.length) throw new Error('truncated CA answer');
    if (fieldNumber === field.certChain) chain.push(bytes.toString('utf8', start, start + length));
    at = start + length;
  }
  return chain;
}

function readVarint(bytes: Buffer, from: number): [number, number] {
  let value = 0;
  for (let at = from, scale = 1; at < bytes.length && at < from + 10; at++, scale *= 128) {
    value += (bytes[at]! & 0x7f) * scale;
    if (bytes[at]! < 0x80) return [value, at + 1];
  }
  throw new Error('truncated varint in the CA\'s answer');
}
