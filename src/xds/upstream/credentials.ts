/**
 * What a new connection to the discovery server proves us with, and how a
 * failed TLS handshake is told apart: the server's certificate not trusted by
 * us, or our client certificate refused by it. Pure: the dial supplies the
 * held certificate, the clock's now and Node's error code.
 */

/** A workload certificate the agent holds in memory (from the CA); the key never touches disk. */
export interface HeldCertificate {
  chain: Buffer;
  key: Buffer;
  /** Expiry of the leaf, ms since the epoch. */
  expiresAt: number;
}

/** The credentials one connection carried; the label of the dial metric and of its log line. */
export type UpstreamCredential = 'none' | 'token' | 'certificate' | 'certificate+token';

export type HeldCertificateChoice =
  | { present: true; certificate: HeldCertificate }
  | { present: false; reason: 'plaintext' | 'cert-dir' | 'none-held' | 'expired' };

/**
 * Whether a TLS connection presents the CA-issued certificate. Istio's rule
 * for its client certificate (pilot/pkg/grpc/tls.go): present it when there is
 * one, unless it has expired, and then the token alone speaks for us.
 * MUTUAL_TLS keeps its files from --certDir; plaintext has no handshake.
 */
export function chooseHeldCertificate(policy: 'NONE' | 'TLS' | 'MUTUAL_TLS', held: HeldCertificate | undefined, now: number): HeldCertificateChoice {
  if (policy === 'NONE') return { present: false, reason: 'plaintext' };
  if (policy === 'MUTUAL_TLS') return { present: false, reason: 'cert-dir' };
  if (!held) return { present: false, reason: 'none-held' };
  if (held.expiresAt <= now) return { present: false, reason: 'expired' };
  return { present: true, certificate: held };
}

export function credentialLabel(certificate: boolean, token: boolean): UpstreamCredential {
  if (certificate) return token ? 'certificate+token' : 'certificate';
  return token ? 'token' : 'none';
}

/** Why a TLS handshake failed, from Node's error code; undefined for anything else (a server down, a reset). */
export type TlsFailure = 'server-not-trusted' | 'client-certificate-refused' | 'client-certificate-required';

/**
 * An alert is the server's verdict on us; the other certificate codes are
 * ours on the server's certificate. A server that wants a certificate we do
 * not send answers certificate_required (TLS 1.3) or handshake_failure (1.2).
 */
export function classifyTlsFailure(code: string | undefined, presentedCertificate: boolean): TlsFailure | undefined {
  if (!code) return undefined;
  if (/ALERT/.test(code)) {
    if (/CERTIFICATE_REQUIRED/.test(code) || (!presentedCertificate && /HANDSHAKE_FAILURE/.test(code))) return 'client-certificate-required';
    if (presentedCertificate && /CERTIFICATE|UNKNOWN_CA|DECRYPT_ERROR|ACCESS_DENIED/.test(code)) return 'client-certificate-refused';
    return undefined;
  }
  return /CERT|SIGNATURE|SELF_SIGNED|ISSUER|ALTNAME/.test(code) ? 'server-not-trusted' : undefined;
}
