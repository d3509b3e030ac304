import { createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { bitString, contextConstructed, contextPrimitive, octetString, oid, sequence, set, smallInteger, utf8String } from './der.ts';

export type KeyAlgorithm = 'ECDSA' | 'RSA';

const generate = promisify(generateKeyPair);

/** A fresh workload key that lives in memory only: P-256, or RSA 2048 on request. */
export async function generateWorkloadKey(algorithm: KeyAlgorithm): Promise<KeyObject> {
  const { privateKey } = algorithm === 'RSA'
    ? await generate('rsa', { modulusLength: 2048 })
    : await generate('ec', { namedCurve: 'prime256v1' });
  return privateKey;
}

const oids = {
  organization: '2.5.4.10',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  sha256WithRsa: '1.2.840.113549.1.1.11',
} as const;

export interface CsrInput {
  key: KeyObject;
  /** The identity asked for, e.g. spiffe://cluster.local/ns/default/sa/reviews. */
  uri: string;
  /** Subject O=, as Istio's agent sets the trust domain there. */
  organization?: string;
}

/**
 * A PKCS#10 certificate request (RFC 2986) for `uri` as the only SAN,
 * signed with SHA-256 by `key`; PEM.
 */
export function buildCsr(input: CsrInput): string {
  const info = sequence(
    smallInteger(0),
    subject(input.organization),
    createPublicKey(input.key).export({ type: 'spki', format: 'der' }),
    contextConstructed(0, sanRequest(input.uri)),
  );
  const rsa = input.key.asymmetricKeyType === 'rsa';
  const algorithm = sequence(oid(rsa ? oids.sha256WithRsa : oids.ecdsaWithSha256), ...(rsa ? [Buffer.from([0x05, 0x00])] : []));
  const der = sequence(info, algorithm, bitString(sign('sha256', info, input.key)));
  return toPem('CERTIFICATE REQUEST', der);
}

function subject(organization: string | undefined): Buffer {
  if (!organization) return sequence();
  return sequence(set(sequence(oid(oids.organization), utf8String(organization))));
}

/** The extensionRequest attribute carrying a critical-free subjectAltName with one URI. */
function sanRequest(uri: string): Buffer {
  const names = sequence(contextPrimitive(6, Buffer.from(uri, 'ascii')));
  const extension = sequence(oid(oids.subjectAltName), octetString(names));
  return sequence(oid(oids.extensionRequest), set(sequence(extension)));
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
