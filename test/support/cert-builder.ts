import { createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { WorkloadKey } from '../../src/ca/csr.ts';
import { bitString, boolean, contextConstructed, contextPrimitive, octetString, oid, sequence, set, tlv, utf8String } from '../../src/ca/der.ts';

/**
 * X.509 certificates built in memory, every field chosen by the test:
 * validity in the past or future, CA or not, any issuer, any key. openssl
 * 3.0's CLI cannot set notBefore; a hostile CA can, so the tests must too.
 */
export interface CertSpec {
  subject: string;
  /** The certificate's public key (the workload key for a leaf). */
  key: KeyObject;
  /** SubjectPublicKeyInfo DER to carry instead of `key`'s (a leaf for a key held as bytes). */
  spki?: Buffer;
  /** Signs it; absent: self-signed by `key`. */
  issuer?: { subject: string; key: KeyObject };
  notBefore: number;
  notAfter: number;
  ca?: boolean;
  uri?: string;
}

export interface BuiltCert {
  pem: string;
  /** The private key of the certificate's public key, to issue more below it. */
  key: KeyObject;
  subject: string;
}

const oids = { commonName: '2.5.4.3', basicConstraints: '2.5.29.19', subjectAltName: '2.5.29.17', ecdsaWithSha256: '1.2.840.10045.4.3.2' };

/** A KeyObject as the agent holds a workload key: bytes only (src/ca/csr.ts, WorkloadKey). */
export function asWorkloadKey(key: KeyObject): WorkloadKey {
  const rsa = key.asymmetricKeyType === 'rsa';
  const pem = key.export({ type: rsa ? 'pkcs1' : 'sec1', format: 'pem' }).toString();
  const curve = key.asymmetricKeyDetails?.namedCurve === 'secp384r1' ? 'P384' : 'P256';
  return { pem, spki: createPublicKey(key).export({ type: 'spki', format: 'der' }), algorithm: rsa ? 'RSA' : 'ECDSA', curve };
}

export const ecKey = (): KeyObject => generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;

/** A certificate for `spec.key` (a private key), signed by `spec.issuer` or by itself. */
export function buildCert(spec: CertSpec): BuiltCert {
  const signer = spec.issuer ?? { subject: spec.subject, key: spec.key };
  const algorithm = sequence(oid(oids.ecdsaWithSha256));
  const tbs = sequence(
    contextConstructed(0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, Buffer.concat([Buffer.from([0x01]), randomBytes(8)])),
    algorithm,
    name(signer.subject),
    sequence(time(spec.notBefore), time(spec.notAfter)),
    name(spec.subject),
    spec.spki ?? createPublicKey(spec.key).export({ type: 'spki', format: 'der' }),
    contextConstructed(3, sequence(...extensions(spec))),
  );
  const der = sequence(tbs, algorithm, bitString(sign('sha256', tbs, signer.key)));
  return { pem: toPem(der), key: spec.key, subject: spec.subject };
}

function extensions(spec: CertSpec): Buffer[] {
  const out = [sequence(oid(oids.basicConstraints), boolean(true), octetString(spec.ca ? sequence(boolean(true)) : sequence()))];
  if (spec.uri) out.push(sequence(oid(oids.subjectAltName), octetString(sequence(contextPrimitive(6, Buffer.from(spec.uri, 'ascii'))))));
  return out;
}

/** An empty subject stays empty, as Istio's workload certificates have it. */
const name = (commonName: string) => (commonName ? sequence(set(sequence(oid(oids.commonName), utf8String(commonName)))) : sequence());

/** UTCTime before 2050, GeneralizedTime after, as RFC 5280 §4.1.2.5 asks. */
function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2026-11-25T08:31:53.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '');
  const year = new Date(ms).getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${digits}Z`));
}

function toPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
