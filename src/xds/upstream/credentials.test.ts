import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseHeldCertificate, classifyTlsFailure, credentialLabel, type HeldCertificate } from './credentials.ts';

const now = 1_800_000_000_000;
const held: HeldCertificate = { chain: Buffer.from('chain'), key: Buffer.from('key'), expiresAt: now + 60_000 };
const expired: HeldCertificate = { ...held, expiresAt: now };

test('which connections present the certificate held from the CA: TLS only, and not once it has expired', () => {
  const rows: [policy: 'NONE' | 'TLS' | 'MUTUAL_TLS', certificate: HeldCertificate | undefined, expected: string][] = [
    ['TLS', held, 'present'],
    ['TLS', undefined, 'none-held'],
    ['TLS', expired, 'expired'],
    ['NONE', held, 'plaintext'],
    ['MUTUAL_TLS', held, 'cert-dir'],
  ];
  for (const [policy, certificate, expected] of rows) {
    const choice = chooseHeldCertificate(policy, certificate, now);
    assert.equal(choice.present ? 'present' : choice.reason, expected, `${policy} ${certificate === held ? 'valid' : certificate ? 'expired' : 'none'}`);
    if (choice.present) assert.equal(choice.certificate, held);
  }
});

test('the credential label a connection is counted and logged under', () => {
  const rows: [certificate: boolean, token: boolean, label: string][] = [
    [false, false, 'none'],
    [false, true, 'token'],
    [true, false, 'certificate'],
    [true, true, 'certificate+token'],
  ];
  for (const [certificate, token, label] of rows) assert.equal(credentialLabel(certificate, token), label, `${certificate} ${token}`);
});

test('a failed handshake: the server refusing our certificate is told apart from us not trusting the server', () => {
  const rows: [code: string | undefined, presented: boolean, expected: string | undefined][] = [
    // Node's codes when we check the server's certificate.
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', false, 'server-not-trusted'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', true, 'server-not-trusted'],
    ['SELF_SIGNED_CERT_IN_CHAIN', true, 'server-not-trusted'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', false, 'server-not-trusted'],
    ['CERT_HAS_EXPIRED', true, 'server-not-trusted'],
    // Alerts: the server's verdict on our certificate.
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', true, 'client-certificate-refused'],
    ['ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', true, 'client-certificate-refused'],
    ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED', true, 'client-certificate-refused'],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', false, 'client-certificate-required'],
    ['ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', false, 'client-certificate-required'],
    ['ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', true, undefined],
    ['ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', true, undefined],
    ['ERR_SSL_TLSV1_ALERT_DECRYPT_ERROR', true, 'client-certificate-refused'],
    ['ERR_SSL_TLSV1_ALERT_ACCESS_DENIED', true, 'client-certificate-refused'],
    ['ERR_SSL_TLSV1_ALERT_ACCESS_DENIED', false, undefined],
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', false, undefined],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', true, 'client-certificate-required'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', false, 'server-not-trusted'],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', false, 'server-not-trusted'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', true, undefined],
    // Not TLS at all.
    ['ECONNREFUSED', true, undefined],
    [undefined, true, undefined],
    ['', true, undefined],
    ['ECONNRESET', false, undefined],
  ];
  for (const [code, presented, expected] of rows) assert.equal(classifyTlsFailure(code, presented), expected, `${code} presented=${presented}`);
});
