import { X509Certificate } from 'node:crypto';
import { firstPemCertificate } from '../shared/pem.ts';
import type { SecretMaterial, StoredSecret } from './secret-store.ts';

/**
 * A stored secret from bytes the consistency check already accepted: serial
 * and expiry come from the first certificate (the leaf of a chain).
 */
export function pemSecret(material: SecretMaterial, files: readonly string[]): StoredSecret {
  const pem = material.kind === 'tls-certificate' ? material.chain : material.trustedCa;
  const block = firstPemCertificate(pem.toString('utf8'));
  if (!block) throw new Error('no certificate in checked bytes'); // the check guarantees one
  const cert = new X509Certificate(block);
  return { material, serial: cert.serialNumber.toUpperCase(), expiresAt: Date.parse(cert.validTo), files };
}
