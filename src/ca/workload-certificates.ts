import { X509Certificate, type KeyObject } from 'node:crypto';
import type { Clock, Timer } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { CaResult } from './ca-client.ts';
import { buildCsr, generateWorkloadKey, type KeyAlgorithm } from './csr.ts';
import { renewalDelayMs, retryDelayMs } from './renewal.ts';

/** A certificate the CA issued, checked against the key and identity asked for. */
export interface IssuedCertificate {
  /** Leaf first, root last, as the CA sent it (Istio serves the whole chain). */
  chain: string[];
  /** PKCS#8 PEM of the in-memory key: handed to the secret store, never logged or written. */
  key: string;
  serial: string;
  issuer: string;
  /** The URI SANs of the leaf. */
  san: string[];
  issuedAt: number;
  expiresAt: number;
  root: string;
}

export interface WorkloadCertificatesOptions {
  clock: Clock;
  logger: Logger;
  /** spiffe://<trust domain>/ns/<namespace>/sa/<service account> */
  identity: string;
  trustDomain: string;
  keyAlgorithm: KeyAlgorithm;
  /** Asks the CA to sign a CSR (the token is read by the caller, per call). */
  sign(csr: string): Promise<CaResult>;
  /** Where a checked certificate goes (the SDS secret store). */
  publish(certificate: IssuedCertificate): void;
  /** Why there is no usable certificate right now, for readiness and /debug/sds. */
  reportProblem(reason: string | undefined): void;
  onResult?(result: { ok: true } | { ok: false; code: string }): void;
  graceRatio: number;
  jitterRatio: number;
  random?: () => number;
}

/**
 * Keeps a workload certificate from the CA: a new key and CSR each time,
 * renewal at Istio's grace point, and retries with backoff while the CA
 * fails; the current certificate keeps serving until it expires.
 */
export class WorkloadCertificates {
  readonly #options: WorkloadCertificatesOptions;
  #current: IssuedCertificate | undefined;
  #timer: Timer | undefined;
  #failures = 0;
  #stopped = false;

  constructor(options: WorkloadCertificatesOptions) {
    this.#options = options;
  }

  get current(): IssuedCertificate | undefined {
    return this.#current;
  }

  /** Runs the first request now; later ones are scheduled. Never throws. */
  start(): Promise<void> {
    return this.#renew();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  async #renew(): Promise<void> {
    const outcome = await this.#request().catch((error: Error) => ({ ok: false as const, code: 'INTERNAL', message: error.message }));
    if (this.#stopped) return;
    this.#options.onResult?.(outcome.ok ? { ok: true } : { ok: false, code: outcome.code });
    if (outcome.ok) return this.#accept(outcome.certificate);
    this.#fail(outcome.code, outcome.message);
  }

  async #request(): Promise<{ ok: true; certificate: IssuedCertificate } | { ok: false; code: string; message: string }> {
    const key = await generateWorkloadKey(this.#options.keyAlgorithm);
    const result = await this.#options.sign(buildCsr({ key, uri: this.#options.identity, organization: this.#options.trustDomain }));
    if (!result.ok) return result;
    const checked = checkIssued(result.chain, key, this.#options.identity);
    return typeof checked === 'string' ? { ok: false, code: 'BAD_CERTIFICATE', message: checked } : { ok: true, certificate: checked };
  }

  #accept(certificate: IssuedCertificate): void {
    const { clock, logger, graceRatio, jitterRatio } = this.#options;
    this.#current = certificate;
    this.#failures = 0;
    this.#options.publish(certificate);
    this.#options.reportProblem(undefined);
    // The lifetime counts from receipt, as Istio's agent counts it: CAs backdate notBefore (ours by a minute), which
    // for a short-lived certificate would put the grace point in the past and renew in a loop.
    const now = clock.now();
    const delay = renewalDelayMs({ issuedAt: now, expiresAt: certificate.expiresAt, now, graceRatio, jitterRatio, random: (this.#options.random ?? Math.random)() });
    logger.info({ serial: certificate.serial, expiresAt: new Date(certificate.expiresAt).toISOString(), renewInMs: delay }, 'workload certificate issued by the CA');
    this.#schedule(delay);
  }

  #fail(code: string, message: string): void {
    const { clock, logger } = this.#options;
    const delay = retryDelayMs(this.#failures++);
    const valid = this.#current !== undefined && this.#current.expiresAt > clock.now();
    const reason = `CA request failed (${code}: ${message})`;
    logger.warn({ code, reason: message, retryInMs: delay, currentCertificate: valid ? this.#current!.serial : 'none' }, valid ? 'certificate renewal failed; the current certificate keeps serving' : 'no workload certificate: the CA request failed');
    if (!valid) this.#options.reportProblem(reason);
    this.#schedule(delay);
  }

  #schedule(delay: number): void {
    this.#timer?.cancel();
    this.#timer = this.#options.clock.setTimeout(() => void this.#renew(), delay);
  }
}

/** The leaf must hold our key and our identity; anything else is refused, never served. */
export function checkIssued(chain: string[], key: KeyObject, identity: string): IssuedCertificate | string {
  if (chain.length < 2) return `the CA sent ${chain.length} certificate(s); a leaf and a root are needed`;
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(chain[0]!);
  } catch (error) {
    return `the CA's leaf certificate does not parse: ${(error as Error).message}`;
  }
  if (!leaf.checkPrivateKey(key)) return 'the CA\'s certificate is not for the key the CSR carried';
  const uris = (leaf.subjectAltName ?? '').split(', ').filter((name) => name.startsWith('URI:')).map((name) => name.slice(4));
  if (!uris.includes(identity)) return `the CA's certificate names ${uris.join(', ') || 'no URI'}, not ${identity}`;
  return {
    chain,
    key: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    serial: leaf.serialNumber.toUpperCase(),
    issuer: leaf.issuer.replaceAll('\n', ', '),
    san: uris,
    issuedAt: Date.parse(leaf.validFrom),
    expiresAt: Date.parse(leaf.validTo),
    root: chain.at(-1)!,
  };
}
