import { join } from 'node:path';

/*
 * Istio's names for a workload's certificate files and for the files istiod's
 * side mounts into the pod, spelled once: --certDir, OUTPUT_CERTS, the SDS
 * feed, the xDS upstream's mutual TLS and the gRPC bootstrap all use them.
 */

/** A workload certificate directory's files (Istio 1.1's /etc/certs layout). */
export const certFileNames = { chain: 'cert-chain.pem', key: 'key.pem', root: 'root-cert.pem' } as const;

/** The three certificate files of a directory, as paths. */
export function certFilesIn(dir: string): Record<keyof typeof certFileNames, string> {
  return { chain: join(dir, certFileNames.chain), key: join(dir, certFileNames.key), root: join(dir, certFileNames.root) };
}

/**
 * Istio's mounts for istiod's root (the CA's and the 15012 port's) and the
 * projected service-account token, relative as Istio names them: read against
 * the working directory (/ in a pod).
 */
export const istioRootCertPath = `./var/run/secrets/istio/${certFileNames.root}`;
export const istioTokenPath = './var/run/secrets/tokens/istio-token';
