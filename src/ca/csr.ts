import { createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
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
}

const generate = promisify(generateKeyPair);
const namedCurves: Record<EccCurve, string> = { P256: 'prime256v1', P384: 'secp384r1' };

/** A fresh workload key that lives in memory only. */
export async function generateWorkloadKey(options: WorkloadKeyOptions | KeyAlgorithm): Promise<KeyObject> {
  const { algorithm, rsaBits = 2048, curve = 'P256' } = typeof options === 'string' ? { algorithm: options } : options;
  const { privateKey } = algorithm === 'RSA'
    ? await generate('rsa', { modulusLength: rsaBits })
    : await generate('ec', { namedCurve: namedCurves[curve] });
  return privateKey;
}

/** PKCS8_KEY: Istio writes PKCS#8 only on request, else SEC 1 (EC) or PKCS#1 (RSA). */
export function exportWorkloadKey(key: KeyObject, pkcs8: boolean): string {
  const type = pkcs8 ? 'pkcs8' : key.asymmetricKeyType === 'rsa' ? 'pkcs1' : 'sec1';
  return key.export({ type, format: 'pem' } as Parameters<KeyObject['export']>[0] & { format: 'pem' }).toString();
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
  key: KeyObject;
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
    createPublicKey(input.key).export({ type: 'spki', format: 'der' }),
    contextConstructed(0, sanRequest(input.uri, !input.organization)),
  );
  const { algorithm, hash } = signatureAlgorithm(input.key);
  const der = sequence(info, algorithm, bitString(sign(hash, info, input.key)));
  return toPem('CERTIFICATE REQUEST', der);
}

function signatureAlgorithm(key: KeyObject): { algorithm: Buffer; hash: string } {
  if (key.asymmetricKeyType === 'rsa') return { algorithm: sequence(oid(oids.sha256WithRsa), Buffer.from([0x05, 0x00])), hash: 'sha256' };
  if (key.asymmetricKeyDetails?.namedCurve === 'secp384r1') return { algorithm: sequence(oid(oids.ecdsaWithSha384)), hash: 'sha384' };
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
