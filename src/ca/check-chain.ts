import { X509Certificate } from 'node:crypto';
import { describe } from '../shared/errors.ts';
import { strictPemBlock } from '../shared/pem.ts';

/**
 * What the agent checks in a CA's answer before anything of it is served.
 * The CA is trusted to sign, not to be well-formed: every element must be a
 * certificate, the leaf must be ours and valid now, and the signatures must
 * lead to a root we trust. Anything else is a refusal (a string saying why),
 * never an exception.
 */
export interface ChainCheckInput {
  /** cert_chain as the CA sent it: leaf first, root last; an element may hold several certificates. */
  chain: readonly string[];
  /** The SubjectPublicKeyInfo DER the CSR carried, as OpenSSL encodes it. */
  spki: Buffer;
  identity: string;
  now: number;
  /** PEM bundle the chain must end in (CA_ROOT_CA, the mesh root); undefined when none is configured. */
  trustedRoots?: string;
}

export interface CheckedChain {
  /** One PEM per certificate, re-encoded from what parsed: leaf first, root last. */
  pems: string[];
  leaf: X509Certificate;
  /** The leaf's URI SANs. */
  uris: string[];
}

/** A CA's clock may run ahead of ours: a leaf that starts this much in our future is still taken. */
export const clockSkewMs = 5 * 60_000;
/** Far more than any CA's chain; bounds the signature checks a hostile answer can ask for. */
export const maxChainCertificates = 16;

export function checkChain(input: ChainCheckInput): CheckedChain | string {
  try {
    return checkParts(input);
  } catch (error) {
    // node:crypto on input nobody foresaw: still a refusal, never a crash.
    return `the CA's answer cannot be checked: ${describe(error)}`;
  }
}

function checkParts(input: ChainCheckInput): CheckedChain | string {
  if (input.chain.length < 2) return `the CA sent ${input.chain.length} chain element(s); a leaf and a root are needed`;
  const certificates = parseElements(input.chain);
  if (typeof certificates === 'string') return certificates;
  const [leaf] = certificates as [X509Certificate, ...X509Certificate[]];
  const uris = uriNames(leaf);
  const refusal = checkLeaf(leaf, uris, input) ?? checkSignatures(certificates) ?? checkAnchor(certificates, input.trustedRoots);
  if (refusal) return refusal;
  return { pems: certificates.map((certificate) => certificate.toString()), leaf, uris };
}

/** Every element: PEM CERTIFICATE blocks and whitespace, nothing else. */
function parseElements(chain: readonly string[]): X509Certificate[] | string {
  const certificates: X509Certificate[] = [];
  for (const [index, element] of chain.entries()) {
    const blocks = [...element.matchAll(strictPemBlock)];
    if (blocks.length === 0) return `chain element ${index} holds no PEM certificate`;
    if (element.replaceAll(strictPemBlock, '').trim() !== '') return `chain element ${index} holds text outside its PEM blocks`;
    for (const [, label, body] of blocks) {
      if (label !== 'CERTIFICATE') return `chain element ${index} holds a ${label} block, not a certificate`;
      if (certificates.length === maxChainCertificates) return `the chain holds more than ${maxChainCertificates} certificates`;
      try {
        certificates.push(new X509Certificate(Buffer.from(body!, 'base64')));
      } catch {
        return `chain element ${index} holds a certificate that does not parse`;
      }
    }
  }
  return certificates;
}

function checkLeaf(leaf: X509Certificate, uris: string[], input: ChainCheckInput): string | undefined {
  // Both sides as OpenSSL re-encodes them: no private KeyObject is needed (csr.ts, WorkloadKey).
  if (!leaf.publicKey.export({ type: 'spki', format: 'der' }).equals(input.spki)) return 'the leaf is not for the key the CSR carried';
  if (!uris.includes(input.identity)) return `the leaf names ${uris.join(', ') || 'no URI'}, not ${input.identity}`;
  if (leaf.ca) return 'the leaf is a CA certificate';
  const [from, to] = [Date.parse(leaf.validFrom), Date.parse(leaf.validTo)];
  if (!(to > input.now)) return `the leaf expired at ${iso(to)}`;
  if (!(from <= input.now + clockSkewMs)) return `the leaf is not valid before ${iso(from)}`;
  return undefined;
}

/** Each certificate is signed by the next, and every one after the leaf is a CA. */
function checkSignatures(certificates: X509Certificate[]): string | undefined {
  const leaf = certificates[0]!;
  for (let at = 1; at < certificates.length; at++) {
    const [child, parent] = [certificates[at - 1]!, certificates[at]!];
    if (parent.fingerprint256 === leaf.fingerprint256) return `the chain names the leaf itself as its ${at === certificates.length - 1 ? 'root' : 'issuer'}`;
    if (!parent.ca) return `chain certificate ${at} (${oneLine(parent.subject)}) is not a CA`;
    if (!child.checkIssued(parent) || !child.verify(parent.publicKey))
      return `chain certificate ${at - 1} (${oneLine(child.subject)}) is not signed by the next one (${oneLine(parent.subject)})`;
  }
  return undefined;
}

/**
 * The chain's top is a root we trust, or is signed by one: a CA may not vouch
 * for itself. The top, not just some certificate of the chain, because the top
 * is what the agent serves as ROOTCA (the anchor Envoy checks every peer
 * against) and writes as root-cert.pem: a trusted certificate lower in the
 * chain does not make an untrusted one above it trusted, else the mesh's trust
 * would widen past CA_ROOT_CA to whatever the CA sends on top.
 */
function checkAnchor(certificates: X509Certificate[], trustedRoots: string | undefined): string | undefined {
  if (trustedRoots === undefined) return undefined;
  const top = certificates.at(-1)!;
  const anchored = parseTrusted(trustedRoots).some(
    (root) => root.fingerprint256 === top.fingerprint256 || (top.checkIssued(root) && top.verify(root.publicKey)),
  );
  return anchored ? undefined : `the chain's root (${oneLine(top.subject)}, SHA-256 ${top.fingerprint256.slice(0, 23)}…) is not a root this agent trusts`;
}

/** Our own root file: what does not parse in it is skipped (the CA's TLS handshake read it already). */
function parseTrusted(bundle: string): X509Certificate[] {
  const roots: X509Certificate[] = [];
  for (const [, label, body] of bundle.matchAll(strictPemBlock)) {
    if (label !== 'CERTIFICATE') continue;
    try {
      roots.push(new X509Certificate(Buffer.from(body!, 'base64')));
    } catch {
      // skipped: see above
    }
  }
  return roots;
}

function uriNames(leaf: X509Certificate): string[] {
  return (leaf.subjectAltName ?? '').split(', ').filter((name) => name.startsWith('URI:')).map((name) => name.slice(4));
}

/** Node leaves `subject` undefined for an empty name: a hostile CA may send one. */
export const oneLine = (name: string | undefined) => name?.replaceAll('\n', ', ') || 'no subject';
const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : 'an unreadable date');
