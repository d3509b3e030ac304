import { generateKeyPair, sign } from 'node:crypto';
import { promisify } from 'node:util';
import { bitString, boolean, contextConstructed, contextPrimitive, octetString, oid, sequence, set, smallInteger, utf8String } from './der.ts';

export type KeyAlgorithm = 'ECDSA' | 'RSA';
/** Istio's names for the curves ECC_CURVE may pick. */
export type EccCurve = 'P256' | 'P384';

export interface WorkloadKeyOptions {
  algorithm: KeyAlgorithm;
  /** WORKLOAD_RSA_KEY_SIZE; 2048 when absent. */
  rsaBits?: number;
  /** ECC_CURVE; P256 when absent. */
  curve?: EccCurve;
  /** PKCS8_KEY: Istio writes PKCS#8 only on request, else SEC 1 (EC) or PKCS#1 (RSA). */
  pkcs8?: boolean;
}

/**
 * A workload key as plain bytes, no KeyObject (issue 44): a KeyObject holds
 * OpenSSL memory V8 does not see, so a small heap keeps one per rotation
 * until some far-off full GC. Node frees the native key of a PEM or DER
 * argument as soon as the call returns.
 */
export interface WorkloadKey {
  /** The private key as served: PKCS#8 with PKCS8_KEY, else SEC 1 / PKCS#1. */
  pem: string;
  /** SubjectPublicKeyInfo DER: the CSR's key, and what the leaf must carry. */
  spki: Buffer;
  algorithm: KeyAlgorithm;
  curve: EccCurve;
}

const generate = promisify(generateKeyPair);
const namedCurves: Record<EccCurve, string> = { P256: 'prime256v1', P384: 'secp384r1' };

/** A fresh workload key that lives in memory only. */
export async function generateWorkloadKey(options: WorkloadKeyOptions | KeyAlgorithm): Promise<WorkloadKey> {
  const { algorithm, rsaBits = 2048, curve = 'P256', pkcs8 = false } = typeof options === 'string' ? { algorithm: options } : options;
  const publicKeyEncoding = { type: 'spki', format: 'der' } as const;
  const { publicKey, privateKey } = algorithm === 'RSA'
    ? await generate('rsa', { modulusLength: rsaBits, publicKeyEncoding, privateKeyEncoding: { type: pkcs8 ? 'pkcs8' : 'pkcs1', format: 'pem' } })
    : await generate('ec', { namedCurve: namedCurves[curve], publicKeyEncoding, privateKeyEncoding: { type: pkcs8 ? 'pkcs8' : 'sec1', format: 'pem' } });
  return { pem: privateKey, spki: publicKey, algorithm, curve };
}

const oids = {
  organization: '2.5.4.10',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  ecdsaWithSha384: '1.2.840.10045.4.3.3',
  sha256WithRsa: '1.2.840.113549.1.1.11',
} as const;

export interface CsrInput {
  key: WorkloadKey;
  /** The identity asked for, e.g. spiffe://cluster.local/ns/default/sa/reviews. */
  uri: string;
  /** Subject O=; Istio's agent leaves the subject empty, so the SAN is all the identity there is. */
  organization?: string;
}

/**
 * A PKCS#10 certificate request (RFC 2986) for `uri` as the only SAN,
 * signed by `key` (SHA-384 for a P-384 key, as Go picks, else SHA-256); PEM.
 */
export function buildCsr(input: CsrInput): string {
  const info = sequence(
    smallInteger(0),
    subject(input.organization),
    input.key.spki,
    contextConstructed(0, sanRequest(input.uri, !input.organization)),
  );
  const { algorithm, hash } = signatureAlgorithm(input.key);
  const der = sequence(info, algorithm, bitString(sign(hash, info, input.key.pem)));
  return toPem('CERTIFICATE REQUEST', der);
}

function signatureAlgorithm(key: WorkloadKey): { algorithm: Buffer; hash: string } {
  if (key.algorithm === 'RSA') return { algorithm: sequence(oid(oids.sha256WithRsa), Buffer.from([0x05, 0x00])), hash: 'sha256' };
  if (key.curve === 'P384') return { algorithm: sequence(oid(oids.ecdsaWithSha384)), hash: 'sha384' };
  return { algorithm: sequence(oid(oids.ecdsaWithSha256)), hash: 'sha256' };
}

function subject(organization: string | undefined): Buffer {
  if (!organization) return sequence();
  return sequence(set(sequence(oid(oids.organization), utf8String(organization))));
}

/**
 * The extensionRequest attribute carrying a subjectAltName with one URI,
 * critical when the subject is empty (RFC 5280 §4.2.1.6, Istio's BuildSANExtension).
 */
function sanRequest(uri: string, critical: boolean): Buffer {
  const names = sequence(contextPrimitive(6, Buffer.from(uri, 'ascii')));
  const extension = sequence(oid(oids.subjectAltName), ...(critical ? [boolean(true)] : []), octetString(names));
  return sequence(oid(oids.extensionRequest), set(sequence(extension)));
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
