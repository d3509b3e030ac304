/*
 * PEM as the agent reads it, in one place: certificate files on disk
 * (--certDir, the SDS feed) and the CA's answers.
 */

/** A complete CERTIFICATE block, header to footer, whatever lies between. */
const certificateBlock = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Every complete CERTIFICATE block of a text, in order. */
export function pemCertificates(text: string): string[] {
  return text.match(certificateBlock) ?? [];
}

/** The first complete CERTIFICATE block (a chain's leaf), if any. */
export function firstPemCertificate(text: string): string | undefined {
  return pemCertificates(text)[0];
}

/** How many PEM blocks a text opens, complete or not, of any label. */
export const pemBlocksOpened = (text: string) => text.split('-----BEGIN ').length - 1;

/**
 * A strict PEM block: an upper-case label, a base64 body, and the footer of
 * the same label. Captures the label and the body. For input from the
 * network (the CA's chain), where anything else is refused.
 */
export const strictPemBlock = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([A-Za-z0-9+/=\r\n]*?)-----END \1-----/g;
