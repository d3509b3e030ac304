import { wireVarint } from '../grpc/field-scanner.ts';
import { eachLenField, encodeVarint, lenField } from '../grpc/proto-wire.ts';

/**
 * istio.v1.auth.IstioCertificateRequest / Response on the wire
 * (istio.io/api security/v1alpha1/ca.proto): two small messages, so they
 * are written and read by hand rather than through a protobuf runtime, which
 * costs several MB and tens of ms on first use (bench/library-cost.ts; the
 * figures are in docs/benchmarks.md).
 */
export interface CertificateRequest {
  csr: string;
  validitySeconds: number;
  /** ISTIO_META_CERT_SIGNER: sent as Istio sends it, `metadata.fields["CertSigner"]` (a google.protobuf.Struct). */
  certSigner?: string;
}

const field = { csr: 1, validity: 3, metadata: 4, certChain: 1 } as const;
/** google.protobuf.Struct.fields (a map: entries of key 1, value 2) and Value.string_value. */
const struct = { fields: 1, entryKey: 1, entryValue: 2, stringValue: 3 } as const;

const key = (number: number, wireType: number) => encodeVarint((number << 3) | wireType);

export function encodeCertificateRequest(request: CertificateRequest): Buffer {
  const parts = [lenField(field.csr, request.csr), key(field.validity, wireVarint), encodeVarint(request.validitySeconds)];
  if (request.certSigner) parts.push(lenField(field.metadata, stringStruct('CertSigner', request.certSigner)));
  return Buffer.concat(parts);
}

/** A Struct with one string field. */
function stringStruct(name: string, value: string): Buffer {
  const entry = Buffer.concat([lenField(struct.entryKey, name), lenField(struct.entryValue, lenField(struct.stringValue, value))]);
  return lenField(struct.fields, entry);
}

/** The PEM strings of `cert_chain` (leaf first, root last); other fields are skipped. Throws a WireError when truncated. */
export function decodeCertificateResponse(bytes: Buffer): string[] {
  const chain: string[] = [];
  eachLenField(bytes, { start: 0, end: bytes.length }, (number, start, end) => {
    if (number === field.certChain) chain.push(bytes.toString('utf8', start, end));
  });
  return chain;
}
