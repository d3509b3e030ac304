import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { certFilesIn } from '../shared/istio-files.ts';
import { Counter, type Registry } from '../metrics/index.ts';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { caChannel, createCertificate, type CaChannel, type CaResult } from './ca-client.ts';
import type { CaSettings } from './ca-settings.ts';
import { writeOutputCerts } from './output-certs.ts';
import { WorkloadCertificates, type IssuedCertificate } from './workload-certificates.ts';

const callTimeoutMs = 10_000;

/** Disposing it stops it: a recipe's stack takes it as it is. */
export interface CaRuntime extends AsyncDisposable {
  /** Why there is no usable workload certificate, for readiness; undefined when there is one. */
  problem(): string | undefined;
  /** The current certificate's root. Not what the relay trusts istiod with: that stays the mounted file, as in Istio. */
  roots(): Buffer | undefined;
  /** The workload certificate held now (chain and in-memory key), for the relay to present to istiod. */
  workloadCertificate(): { chain: Buffer; key: Buffer; expiresAt: number } | undefined;
  debug(): unknown;
  stop(): void;
}

export interface StartCaOptions {
  settings: CaSettings;
  /** Every certificate issued (checked), before OUTPUT_CERTS is written: the rotation owner serves it over SDS. */
  onIssued: (certificate: IssuedCertificate) => void;
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /**
   * The first CA call (and with it the load of @grpc/grpc-js, on the main
   * thread) waits for this, at most `firstCallWaitMs`: Envoy's spawn, so
   * that load runs while Envoy boots instead of delaying its spawn. The key
   * is made at once: an RSA key is slow to make, on the thread pool.
   */
  firstCallAfter?: Promise<unknown>;
}

/** Envoy asks for its certificate soon after its spawn; a spawn that never comes does not hold the CA back longer. */
const firstCallWaitMs = 1000;

/**
 * Gets the workload certificate from the CA and keeps it fresh, handing each
 * one to `onIssued` (and OUTPUT_CERTS). The first request runs in the background;
 * while it fails, `problem()` says why and retries go on.
 */
export async function startCa(options: StartCaOptions): Promise<CaRuntime> {
  const { settings, logger } = options;
  const metrics = registerCaMetrics(options.registry);
  const firstCall = options.firstCallAfter
    ? Promise.race([options.firstCallAfter, options.clock.sleep(firstCallWaitMs)]).catch(() => undefined)
    : Promise.resolve();
  // Kept from rotation to rotation, closed with the CA part (ca-client.ts says why).
  const channel = caChannel();
  const certificates = new WorkloadCertificates({
    clock: options.clock, logger, identity: settings.identity, key: settings.key, pkcs8Key: settings.pkcs8Key,
    graceRatio: settings.graceRatio, jitterRatio: settings.jitterRatio,
    sign: async (csr) => {
      await firstCall;
      return signWithToken(settings, { csr, channel }, () => metrics.tokenFailures.inc(), logger);
    },
    trustedRoots: () => readTrustedRoots(settings),
    publish: (certificate) => publish(options.onIssued, certificate, settings, logger),
    reportProblem: () => undefined, // asked per probe instead: problem() also knows when the certificate expires
    onResult: countResult(metrics),
  });
  logStart(logger, settings);
  void certificates.start(); // Envoy starts meanwhile: its SDS stream waits for `default`. start() never rejects.
  return caRuntime(certificates, settings, channel);
}

function countResult(metrics: ReturnType<typeof registerCaMetrics>) {
  return (result: CaResult) => {
    metrics.requests.inc({ result: result.ok ? 'ok' : result.code });
    metrics.outgoing.inc({ request_type: 'csr' });
    if (!result.ok) metrics.failedOutgoing.inc({ request_type: 'csr' });
  };
}

function logStart(logger: Logger, settings: CaSettings): void {
  const { address: ca, identity, key, certSigner } = settings;
  const fields = { ca, plaintext: settings.plaintext || undefined, identity, key, certSigner, caHeaders: Object.keys(settings.headers) };
  logger.info(fields, 'asking the CA for the workload certificate');
}

function caRuntime(certificates: WorkloadCertificates, settings: CaSettings, channel: CaChannel): CaRuntime {
  const stop = () => {
    certificates.stop();
    channel.close();
  };
  return {
    problem: () => certificates.problem(),
    roots: () => (certificates.current ? Buffer.from(certificates.current.root) : undefined),
    workloadCertificate: () => {
      const current = certificates.current;
      return current && { chain: Buffer.from(current.chain.join('')), key: Buffer.from(current.key), expiresAt: current.expiresAt };
    },
    debug: () => caDebug(settings, certificates.current, certificates.problem()),
    stop,
    [Symbol.asyncDispose]: async () => stop(),
  };
}

/** The token is read for every call: a projected token rotates under us. */
async function signWithToken(
  settings: CaSettings,
  { csr, channel }: { csr: string; channel: CaChannel },
  tokenFailed: () => void,
  logger: Logger,
): Promise<CaResult> {
  let token: string;
  let roots: Buffer | undefined;
  try {
    token = (await readFile(settings.tokenPath, 'utf8')).trim();
  } catch (error) {
    tokenFailed();
    return { ok: false, code: 'TOKEN', message: `cannot read the token file ${settings.tokenPath}: ${(error as Error).message}` };
  }
  if (!settings.plaintext) {
    try {
      roots = await readFile(settings.rootsPath);
    } catch (error) {
      return { ok: false, code: 'TLS', message: `cannot read the CA's root ${settings.rootsPath}: ${(error as Error).message}` };
    }
  }
  logger.debug({ ca: settings.address }, 'CreateCertificate');
  const provisioned = settings.plaintext ? undefined : await readProvisioned(settings.provCert);
  return createCertificate({
    endpoint: {
      address: settings.address,
      tls: settings.plaintext ? undefined : { roots: roots!, serverName: settings.serverName, ...provisioned },
      clusterId: settings.clusterId,
      headers: settings.headers,
    },
    request: { csr, validitySeconds: settings.ttlSeconds, certSigner: settings.certSigner },
    token,
    timeoutMs: callTimeoutMs,
    channel,
  });
}

/** PROV_CERT's certificate and key, presented to the CA when both are there (Istio's GetKeyCertsForCA); else the token alone. */
async function readProvisioned(dir: string | undefined): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  if (dir === undefined) return undefined;
  const { chain, key } = certFilesIn(dir);
  const [certBytes, keyBytes] = await Promise.all([readFile(chain).catch(() => undefined), readFile(key).catch(() => undefined)]);
  if (!certBytes || !keyBytes) return undefined;
  // Expired or unreadable: the token alone, as Istio's client does.
  try {
    return new X509Certificate(certBytes).validToDate.getTime() > Date.now() ? { cert: certBytes, key: keyBytes } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The roots the CA's chain must end in: CA_ROOT_CA, the same file the CA's
 * TLS is checked against (Istio's mesh root). Absent by default on a
 * plaintext CA: nothing configured, nothing to check; set but unreadable: the
 * answer is not taken (the read error is the failure).
 */
async function readTrustedRoots(settings: CaSettings): Promise<string | undefined> {
  try {
    return await readFile(settings.rootsPath, 'utf8');
  } catch (error) {
    if (settings.plaintext && !settings.rootsExplicit && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the trusted root ${settings.rootsPath} to check the CA's chain: ${(error as Error).message}`);
  }
}

function publish(onIssued: StartCaOptions['onIssued'], certificate: IssuedCertificate, settings: CaSettings, logger: Logger): void {
  onIssued(certificate);
  if (settings.outputDir)
    void writeOutput(settings.outputDir, certificate, settings.outputShared).catch((error: Error) =>
      logger.warn({ dir: settings.outputDir, err: error }, 'cannot write OUTPUT_CERTS'),
    );
}

/** OUTPUT_CERTS: key, chain and root swapped in together (output-certs.ts). */
const writeOutput = (dir: string, certificate: IssuedCertificate, shared = false) =>
  writeOutputCerts(dir, { key: certificate.key, chain: certificate.chain.join(''), root: certificate.root }, shared);

function registerCaMetrics(registry: Registry) {
  const registers = [registry];
  return {
    requests: new Counter({
      name: 'istio_agent_ca_requests_total',
      help: 'CreateCertificate calls to the CA, by result: ok, or the failure (gRPC status name, CONNECT, TLS, TOKEN, BAD_CERTIFICATE)',
      labelNames: ['result'],
      registers,
    }),
    tokenFailures: new Counter({
      name: 'istio_agent_ca_token_read_failures_total',
      help: 'Times the service-account token file could not be read for a CA call',
      registers,
    }),
    // Istio's names for the same calls, which its dashboards query.
    outgoing: new Counter({
      name: 'istio_agent_num_outgoing_requests',
      help: 'Requests to the CA, by request_type (csr)',
      labelNames: ['request_type'],
      registers,
    }),
    failedOutgoing: new Counter({
      name: 'istio_agent_num_failed_outgoing_requests',
      help: 'Requests to the CA that failed, by request_type (csr)',
      labelNames: ['request_type'],
      registers,
    }),
  };
}

/** What /debug/sds shows of the CA: never the key. */
function caDebug(settings: CaSettings, current: IssuedCertificate | undefined, problem: string | undefined) {
  return {
    address: settings.address,
    identity: settings.identity,
    certificate: current && {
      serial: current.serial,
      issuer: current.issuer,
      san: current.san,
      issuedAt: new Date(current.issuedAt).toISOString(),
      expiresAt: new Date(current.expiresAt).toISOString(),
    },
    problem,
  };
}
