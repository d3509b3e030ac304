import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Channel, credentials, Metadata, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { badFile, badFlag } from '../shared/errors.ts';
import { formatHostPort } from '../shared/host-port.ts';
import type { HostPort } from '../shared/proxy-config.ts';

/** How the agent reaches the discovery server. */
export interface UpstreamOptions {
  address: HostPort;
  policy: 'NONE' | 'MUTUAL_TLS';
  /** cert-chain.pem, key.pem, root-cert.pem; read again for every new connection. */
  certDir: string;
  /** TLS server name (SNI and certificate check); the address's host when absent. */
  serverName?: string;
  /** Sent as `authorization: Bearer <content>`; read again for every new stream. */
  tokenFile?: string;
}

export type UpstreamCall = ReturnType<Channel['createCall']>;

const mib = 1024 * 1024;

/**
 * Limits sized for a 50 MB push: no message size cap, and a 16 MiB HTTP/2
 * window (with the 64 KiB default a 10 MB response takes ~3× longer).
 * Keepalive as Istio's agent: ping every 30 s, give up after 10 s.
 */
export const upstreamChannelOptions: ChannelOptions = {
  'grpc.max_receive_message_length': -1,
  'grpc.max_send_message_length': -1,
  'grpc-node.flow_control_window': 16 * mib,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  // One connection per Envoy stream: never share a subchannel with another stream.
  'grpc.use_local_subchannel_pool': 1,
};

export const certFileNames = { chain: 'cert-chain.pem', key: 'key.pem', root: 'root-cert.pem' } as const;

interface Material {
  credentials: ChannelCredentials;
  metadata: Metadata;
}

/** Reads the TLS files and the token now; throws AgentError naming the file at fault. */
export async function loadMaterial(options: UpstreamOptions): Promise<Material> {
  const metadata = new Metadata();
  if (options.tokenFile) metadata.set('authorization', `Bearer ${(await readText(options.tokenFile, '--xdsTokenFile')).trim()}`);
  if (options.policy === 'NONE') return { credentials: credentials.createInsecure(), metadata };
  const files = Object.fromEntries(
    await Promise.all(Object.entries(certFileNames).map(async ([key, name]) => [key, await readCert(join(options.certDir, name))] as const)),
  ) as Record<keyof typeof certFileNames, Buffer>;
  checkKeyPair(options.certDir, files.chain, files.key, files.root);
  return { credentials: credentials.createSsl(files.root, files.key, files.chain), metadata };
}

async function readText(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw badFlag(flag, `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? error})`, error);
  }
}

async function readCert(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw badFile(path, `cannot read (${(error as NodeJS.ErrnoException).code ?? error}); needed by --controlPlaneAuthPolicy MUTUAL_TLS`, error);
  }
}

/** A key that does not match its certificate would only fail at handshake time, far from the cause. */
function checkKeyPair(certDir: string, chain: Buffer, key: Buffer, root: Buffer): void {
  const parse = <T>(file: string, make: () => T): T => {
    try {
      return make();
    } catch (error) {
      throw badFile(join(certDir, file), `not a PEM ${file === certFileNames.key ? 'private key' : 'certificate'}`, error);
    }
  };
  const cert = parse(certFileNames.chain, () => new X509Certificate(chain));
  const privateKey = parse(certFileNames.key, () => createPrivateKey(key));
  parse(certFileNames.root, () => new X509Certificate(root));
  if (!cert.checkPrivateKey(privateKey)) throw badFile(join(certDir, certFileNames.key), `does not match the certificate in ${certFileNames.chain}`);
}

/** A fresh channel with the files as they are now, and a call on it. */
export async function dialUpstream(options: UpstreamOptions, method: string): Promise<{ channel: Channel; call: UpstreamCall; metadata: Metadata }> {
  const material = await loadMaterial(options);
  const serverName = options.serverName ? { 'grpc.ssl_target_name_override': options.serverName, 'grpc.default_authority': options.serverName } : {};
  const channel = new Channel(formatHostPort(options.address), material.credentials, { ...upstreamChannelOptions, ...serverName });
  const call = channel.createCall(method, Infinity, null, null, null);
  return { channel, call, metadata: material.metadata };
}
