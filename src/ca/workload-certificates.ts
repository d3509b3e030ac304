import type { Clock, Timer } from '../shared/clock.ts';
import { describe } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import type { CaResult } from './ca-client.ts';
import { checkChain, oneLine } from './check-chain.ts';
import { buildCsr, generateWorkloadKey, type WorkloadKey, type WorkloadKeyOptions } from './csr.ts';
import { renewalDelayMs, retryDelayMs } from './renewal.ts';

/** A certificate the CA issued, checked against the key and identity asked for. */
export interface IssuedCertificate {
  /** Leaf first, root last, as the CA sent it (Istio serves the whole chain). */
  chain: string[];
  /** PEM of the in-memory key (PKCS#8 with PKCS8_KEY): handed to the secret store, never logged. */
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
  /** The workload key asked for: algorithm, RSA size, curve. */
  key: WorkloadKeyOptions;
  /** PKCS8_KEY: the key PEM as PKCS#8 rather than SEC 1 / PKCS#1. */
  pkcs8Key?: boolean;
  /** Asks the CA to sign a CSR (the token is read by the caller, per call). */
  sign(csr: string): Promise<CaResult>;
  /** The roots the CA's chain must end in (CA_ROOT_CA), read per answer; undefined: none configured. */
  trustedRoots?(): Promise<string | undefined>;
  /** Where a checked certificate goes (the SDS secret store). */
  publish(certificate: IssuedCertificate): void;
  /** Why there is no usable certificate right now, for readiness and /debug/sds. */
  reportProblem(reason: string | undefined): void;
  onResult?(result: { ok: true } | { ok: false; code: string }): void;
  graceRatio: number;
  jitterRatio: number;
  /** In [0, 1): the renewal and retry jitter's source (Math.random in production). */
  random?: () => number;
}

type Outcome = { ok: true; certificate: IssuedCertificate } | { ok: false; code: string; message: string };

/**
 * Keeps a workload certificate from the CA: a new key and CSR each time,
 * renewal at Istio's grace point, and retries with jittered backoff while
 * the CA fails or sends what must be refused; the current certificate keeps
 * serving until it expires. Nothing the CA sends can throw out of here.
 */
export class WorkloadCertificates {
  readonly #options: WorkloadCertificatesOptions;
  #current: IssuedCertificate | undefined;
  #timer: Timer | undefined;
  #failures = 0;
  #stopped = false;
  /** Why there is no certificate, as last reported; undefined once one is held. */
  #problem: string | undefined = 'no workload certificate yet: the first CA request is under way';
  #lastFailure: string | undefined;

  constructor(options: WorkloadCertificatesOptions) {
    this.#options = options;
  }

  get current(): IssuedCertificate | undefined {
    return this.#current;
  }

  /** Runs the first request now; later ones are scheduled. Never throws, never rejects. */
  start(): Promise<void> {
    return this.#renew();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  /**
   * Why the pod cannot serve with a workload certificate now, for readiness:
   * asked at every probe, so a certificate that expires while the CA keeps
   * failing turns readiness at its expiry, not at the next failed retry.
   */
  problem(): string | undefined {
    const current = this.#current;
    if (current && current.expiresAt <= this.#options.clock.now()) {
      return `the workload certificate expired at ${new Date(current.expiresAt).toISOString()} and no new one was ` +
        `issued${this.#lastFailure ? ` (last: ${this.#lastFailure})` : ''}`;
    }
    return this.#problem;
  }

  async #renew(): Promise<void> {
    try {
      const outcome = await this.#request().catch((error: unknown): Outcome => ({ ok: false, code: 'INTERNAL', message: describe(error) }));
      if (this.#stopped) return;
      this.#options.onResult?.(outcome.ok ? { ok: true } : { ok: false, code: outcome.code });
      if (outcome.ok) return this.#accept(outcome.certificate);
      this.#fail(outcome.code, outcome.message);
    } catch (error) {
      // Publishing or logging threw: the answer passed every check, so this is ours to fix, and still no reason to die.
      if (this.#stopped) return;
      this.#options.logger.error({ error: describe(error) }, 'handling the CA\'s answer failed; retrying');
      this.#schedule(this.#nextRetryDelay());
    }
  }

  async #request(): Promise<Outcome> {
    const { identity, clock } = this.#options;
    const key = await generateWorkloadKey({ ...this.#options.key, pkcs8: this.#options.pkcs8Key ?? false });
    const result = await this.#options.sign(buildCsr({ key, uri: identity }));
    if (!result.ok) return result;
    const trustedRoots = await this.#options.trustedRoots?.();
    const checked = checkIssued({ chain: result.chain, key, identity, now: clock.now(), trustedRoots });
    return typeof checked === 'string' ? { ok: false, code: 'BAD_CERTIFICATE', message: checked } : { ok: true, certificate: checked };
  }

  #accept(certificate: IssuedCertificate): void {
    const { clock, logger, graceRatio, jitterRatio } = this.#options;
    this.#options.publish(certificate);
    this.#current = certificate;
    this.#failures = 0;
    this.#problem = undefined;
    this.#lastFailure = undefined;
    this.#options.reportProblem(undefined);
    // The lifetime counts from receipt, as Istio's agent counts it: CAs backdate notBefore (ours by a minute), which
    // for a short-lived certificate would put the grace point in the past and renew in a loop.
    const now = clock.now();
    const delay = renewalDelayMs({ issuedAt: now, expiresAt: certificate.expiresAt, now, graceRatio, jitterRatio, random: this.#random() });
    logger.info(
      { serial: certificate.serial, expiresAt: new Date(certificate.expiresAt).toISOString(), renewInMs: delay },
      'workload certificate issued by the CA',
    );
    this.#schedule(delay);
  }

  /** One log line per failed or refused answer; a refused answer is never served. */
  #fail(code: string, message: string): void {
    const { clock, logger } = this.#options;
    const delay = this.#nextRetryDelay();
    const valid = this.#current !== undefined && this.#current.expiresAt > clock.now();
    const what = code === 'BAD_CERTIFICATE' ? 'refused the CA\'s answer' : 'CA request failed';
    const reason = `${what} (${code}: ${message})`;
    this.#lastFailure = reason;
    logger.warn(
      { code, reason: message, retryInMs: delay, currentCertificate: valid ? this.#current!.serial : 'none' },
      valid ? 'certificate renewal failed; the current certificate keeps serving' : 'no workload certificate: the CA request failed',
    );
    if (!valid) {
      this.#problem = reason;
      this.#options.reportProblem(reason);
    }
    this.#schedule(delay);
  }

  /** Refusals and failures share one backoff: an answer refused at once must not mean a request a second. */
  #nextRetryDelay(): number {
    return retryDelayMs(this.#failures++, this.#random());
  }

  #random(): number {
    return (this.#options.random ?? Math.random)();
  }

  #schedule(delay: number): void {
    this.#timer?.cancel();
    this.#timer = this.#options.clock.setTimeout(() => void this.#renew(), delay);
  }
}

export interface IssuedCheckInput {
  chain: readonly string[];
  key: WorkloadKey;
  identity: string;
  now: number;
  trustedRoots: string | undefined;
}

/** The CA's answer as served, or why it is refused (check-chain.ts says what is checked). */
export function checkIssued(input: IssuedCheckInput): IssuedCertificate | string {
  const checked = checkChain({ ...input, spki: input.key.spki });
  if (typeof checked === 'string') return checked;
  const { leaf, pems, uris } = checked;
  return {
    chain: pems,
    key: input.key.pem,
    serial: leaf.serialNumber.toUpperCase(),
    issuer: oneLine(leaf.issuer),
    san: uris,
    issuedAt: Date.parse(leaf.validFrom),
    expiresAt: Date.parse(leaf.validTo),
    root: pems.at(-1)!,
  };
}
