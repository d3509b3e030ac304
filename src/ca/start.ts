import { readFile } from 'node:fs/promises';
import { Counter, type Registry } from '../metrics/index.ts';
import { pemSecret } from '../sds/pem-secret.ts';
import { rootSecretName, workloadSecretName } from '../sds/resource-names.ts';
import type { SecretStore } from '../sds/secret-store.ts';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { createCertificate, type CaResult } from './ca-client.ts';
import type { CaSettings } from './ca-settings.ts';
import { writeOutputCerts } from './output-certs.ts';
import { WorkloadCertificates, type IssuedCertificate } from './workload-certificates.ts';

const callTimeoutMs = 10_000;

export interface CaRuntime {
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
  store: SecretStore;
  registry: Registry;
  clock: Clock;
  logger: Logger;
}

/**
 * Gets the workload certificate from the CA and keeps it fresh, feeding the
 * SDS secret store (`default`, `ROOTCA`). The first request runs in the background;
 * while it fails, `problem()` says why and retries go on.
 */
export async function startCa(options: StartCaOptions): Promise<CaRuntime> {
  const { settings, store, logger } = options;
  const metrics = registerCaMetrics(options.registry);
  let problem: string | undefined = 'no workload certificate yet: the first CA request is under way';
  const certificates = new WorkloadCertificates({
    clock: options.clock, logger, identity: settings.identity, trustDomain: settings.trustDomain, keyAlgorithm: settings.keyAlgorithm,
    graceRatio: settings.graceRatio, jitterRatio: settings.jitterRatio,
    sign: (csr) => signWithToken(settings, csr, () => metrics.tokenFailures.inc(), logger),
    publish: (certificate) => publish(store, certificate, settings, logger),
    reportProblem: (reason) => (problem = reason),
    onResult: (result) => metrics.requests.inc({ result: result.ok ? 'ok' : result.code }),
  });
  logger.info({ ca: settings.address, identity: settings.identity, keyAlgorithm: settings.keyAlgorithm }, 'asking the CA for the workload certificate');
  void certificates.start(); // Envoy starts meanwhile: its SDS stream waits for `default`
  return {
    problem: () => problem,
    roots: () => (certificates.current ? Buffer.from(certificates.current.root) : undefined),
    workloadCertificate: () => {
      const current = certificates.current;
      return current && { chain: Buffer.from(current.chain.join('')), key: Buffer.from(current.key), expiresAt: current.expiresAt };
    },
    debug: () => caDebug(settings, certificates.current, problem),
    stop: () => certificates.stop(),
  };
}

/** The token is read for every call: a projected token rotates under us. */
async function signWithToken(settings: CaSettings, csr: string, tokenFailed: () => void, logger: Logger): Promise<CaResult> {
  let token: string;
  let roots: Buffer;
  try {
    token = (await readFile(settings.tokenPath, 'utf8')).trim();
  } catch (error) {
    tokenFailed();
    return { ok: false, code: 'TOKEN', message: `cannot read the token file ${settings.tokenPath}: ${(error as Error).message}` };
  }
  try {
    roots = await readFile(settings.rootsPath);
  } catch (error) {
    return { ok: false, code: 'TLS', message: `cannot read the CA's root ${settings.rootsPath}: ${(error as Error).message}` };
  }
  logger.debug({ ca: settings.address }, 'CreateCertificate');
  return createCertificate({
    endpoint: { address: settings.address, tls: { roots, serverName: settings.serverName }, clusterId: settings.clusterId },
    request: { csr, validitySeconds: settings.ttlSeconds },
    token,
    timeoutMs: callTimeoutMs,
  });
}

function publish(store: SecretStore, certificate: IssuedCertificate, settings: CaSettings, logger: Logger): void {
  const chain = Buffer.from(certificate.chain.join(''));
  store.put(workloadSecretName, pemSecret({ kind: 'tls-certificate', chain, key: Buffer.from(certificate.key) }, []));
  store.put(rootSecretName, pemSecret({ kind: 'validation-context', trustedCa: Buffer.from(certificate.root) }, []));
  if (settings.outputDir) void writeOutput(settings.outputDir, certificate).catch((error: Error) => logger.warn({ dir: settings.outputDir, error: error.message }, 'cannot write OUTPUT_CERTS'));
}

/** OUTPUT_CERTS: key, chain and root swapped in together (output-certs.ts). */
const writeOutput = (dir: string, certificate: IssuedCertificate) => writeOutputCerts(dir, { key: certificate.key, chain: certificate.chain.join(''), root: certificate.root });

function registerCaMetrics(registry: Registry) {
  const registers = [registry];
  return {
    requests: new Counter({ name: 'pilot_agent_ca_requests_total', help: 'CreateCertificate calls to the CA, by result: ok, or the failure (gRPC status name, CONNECT, TLS, TOKEN, BAD_CERTIFICATE)', labelNames: ['result'], registers }),
    tokenFailures: new Counter({ name: 'pilot_agent_ca_token_read_failures_total', help: 'Times the service-account token file could not be read for a CA call', registers }),
  };
}

/** What /debug/sds shows of the CA: never the key. */
function caDebug(settings: CaSettings, current: IssuedCertificate | undefined, problem: string | undefined) {
  return {
    address: settings.address,
    identity: settings.identity,
    certificate: current && { serial: current.serial, issuer: current.issuer, san: current.san, issuedAt: new Date(current.issuedAt).toISOString(), expiresAt: new Date(current.expiresAt).toISOString() },
    problem,
  };
}
