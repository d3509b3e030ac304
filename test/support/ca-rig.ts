import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startCaPeer, type CaMode, type CaPeer } from './ca-peer.ts';
import { tempDir } from './cleanup.ts';
import { issueServerPair, makeCsrSigner, type CsrSigner } from './csr-signer.ts';
import type { Peer } from './peer.ts';
import { startRig, type Rig } from './rig.ts';
import { sdsHttpsService } from './sds-rig.ts';

export const identity = 'spiffe://cluster.local/ns/default/sa/app';
export const token = 'projected-token-for-app';
const istiodName = 'istiod.istio-system.svc';

export interface CaRig extends Rig {
  ca: CaPeer;
  /** The CA's signer (the mesh's root), e.g. for a client certificate the mesh trusts; closed with the rig. */
  signer: CsrSigner;
  peer: Peer;
  files: { token: string; root: string; dir: string };
}

export interface CaRigOptions {
  ttlSeconds?: number;
  /** Set on the CA before the agent starts (e.g. refusing). */
  initialMode?: CaMode;
  env?: Record<string, string>;
  /** Replaces the token file's content (a wrong token); null: none given, so Istio's path, absent here. */
  tokenText?: string | null;
  /** The agent trusts another CA's root for the CA's TLS. */
  wrongRoot?: boolean;
  /** The xDS peer as istiod's 15012: TLS for istiod's name, the token required, client certificates checked. */
  xdsTls?: XdsTlsOptions;
}

export interface XdsTlsOptions {
  /** optional: verified when given (istiod's way); required: no certificate, no connection. */
  clientCert: 'optional' | 'required';
  /** The peer checks client certificates against another CA's root than the one that signs ours. */
  otherClientCa?: boolean;
  /** The agent checks the peer's certificate against another root. */
  wrongXdsRoot?: boolean;
  /** The peer closes each connection after this long, so the agent dials again. */
  maxConnectionAge?: string;
}

/**
 * An agent with no mounted certificates and CA_ADDR pointing at the test CA
 * (TLS, token, identity checked), Envoy serving HTTPS with `default` over SDS.
 */
export async function startCaRig(options: CaRigOptions = {}): Promise<CaRig> {
  await using undo = new AsyncDisposableStack();
  const signer: CsrSigner = await makeCsrSigner();
  undo.defer(() => signer.close());
  const dir = await tempDir(undo, 'ca-rig-');
  const files = { token: join(dir, 'istio-token'), root: join(dir, 'root-cert.pem'), dir };
  if (options.tokenText !== null) await writeFile(files.token, options.tokenText ?? token);
  await writeFile(files.root, options.wrongRoot ? await otherRoot() : signer.root);
  // Also for localhost: CA_ADDR names the CA by it, and a CA_ADDR is checked against its own host (as Istio).
  const tls = await issueServerPair(signer, istiodName, ['localhost']);
  // Signed by the same root, for a name the agent does not expect (mode altCert).
  const altTls = await issueServerPair(signer, 'someone-else.example');
  const ca = await startCaPeer({ ca: signer.files, tls, altTls, token, identity, ttlSeconds: options.ttlSeconds });
  undo.defer(() => ca.stop());
  if (options.initialMode) await ca.setMode(options.initialMode);
  const xds = options.xdsTls && (await xdsTlsSetup(options.xdsTls, { dir, tls, root: signer.root }));
  const env = {
    CA_ADDR: `localhost:${ca.address.split(':').at(-1)}`,
    CA_ROOT_CA: files.root,
    ISTIOD_SAN: istiodName,
    POD_NAMESPACE: 'default',
    SERVICE_ACCOUNT: 'app',
    ...xds?.env,
    ...options.env,
  };
  const rig = await startRig(undo, {
    upstreamBody: 'hello with a CA certificate',
    discovery: { resources: (ports) => sdsHttpsService({ listenerPort: ports.listenerPort, upstreamPort: ports.upstreamPort }), peerArgs: xds?.peerArgs },
    agent: { env, args: options.tokenText === null ? [] : ['--xdsTokenFile', files.token] },
  });
  return { ...rig, peer: rig.peer!, ca, files, signer };
}

/** The peer's TLS arguments and the agent's XDS_ROOT_CA for a peer shaped like istiod's 15012. */
async function xdsTlsSetup(options: XdsTlsOptions, rig: { dir: string; tls: { cert: string; key: string }; root: string }) {
  const clientCa = join(rig.dir, 'xds-client-ca.pem');
  const xdsRoot = join(rig.dir, 'xds-root.pem');
  await writeFile(clientCa, options.otherClientCa ? await otherRoot() : rig.root);
  await writeFile(xdsRoot, options.wrongXdsRoot ? await otherRoot() : rig.root);
  const peerArgs = [
    '--tls-cert',
    rig.tls.cert,
    '--tls-key',
    rig.tls.key,
    '--require-token',
    token,
    '--client-ca',
    clientCa,
    '--client-cert',
    options.clientCert,
  ];
  if (options.maxConnectionAge) peerArgs.push('--max-connection-age', options.maxConnectionAge);
  return { peerArgs, env: { XDS_ROOT_CA: xdsRoot } };
}

async function otherRoot(): Promise<string> {
  const other = await makeCsrSigner();
  await other.close();
  return other.root;
}

/** Serials the CA issued, in order, from its log. */
export const issuedSerials = (rig: CaRig) => rig.ca.log.entries.filter((entry) => entry.event === 'request' && entry.serial).map((entry) => entry.serial!);

export async function readiness(rig: CaRig): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${rig.statusPort}/healthz/ready`);
  return { status: response.status, body: await response.text() };
}
