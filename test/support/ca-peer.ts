import { execa, type ResultPromise } from 'execa';
import { LineLog } from './lines.ts';
import { caPeerBin } from './paths.ts';
import { own } from './processes.ts';

export interface CaPeerEvent {
  event: string;
  identity?: string;
  serial?: string;
  error?: string;
  [key: string]: unknown;
}

export interface CaMode {
  /** A message: every call answers UNAVAILABLE with it. */
  refuse?: string;
  delayMs?: number;
  ttlSeconds?: number;
  /** A chain the agent must refuse (test/peers/ca-server signer.go hostileModes). */
  hostile?: HostileMode;
  /** A message: every call answers PERMISSION_DENIED with it. */
  deny?: string;
  /** A chain element of this many bytes is added to each answer. */
  padBytes?: number;
  /** New connections get the `altTls` certificate (another server name). */
  altCert?: boolean;
}

export type HostileMode = 'non-certificate' | 'expired' | 'not-yet-valid' | 'wrong-root' | 'self-root';

export interface CaPeer {
  address: string;
  pid: number;
  log: LineLog<CaPeerEvent>;
  setMode(mode: CaMode): Promise<void>;
  stop(): Promise<void>;
}

export interface CaPeerOptions {
  ca: { cert: string; key: string };
  tls: { cert: string; key: string };
  /** Served instead of `tls` while the mode says altCert. */
  altTls?: { cert: string; key: string };
  token: string;
  identity: string;
  ttlSeconds?: number;
  address?: string;
}

/** Starts test/peers/ca-server: istiod's CreateCertificate over TLS, checking token and identity. */
export async function startCaPeer(options: CaPeerOptions): Promise<CaPeer> {
  const child: ResultPromise = execa(
    caPeerBin,
    [
      '--address',
      options.address ?? '127.0.0.1:0',
      '--ca-cert',
      options.ca.cert,
      '--ca-key',
      options.ca.key,
      '--tls-cert',
      options.tls.cert,
      '--tls-key',
      options.tls.key,
      ...(options.altTls ? ['--alt-tls-cert', options.altTls.cert, '--alt-tls-key', options.altTls.key] : []),
      '--token',
      options.token,
      '--identity',
      options.identity,
      '--ttl',
      `${options.ttlSeconds ?? 86_400}s`,
    ],
    { reject: false, buffer: false, stdin: 'ignore', stderr: 'inherit', detached: true },
  );
  own(child, child, 'CA peer');
  const log = new LineLog<CaPeerEvent>(child.stdout!);
  try {
    const listening = await log.waitFor((entry) => entry.event === 'listening', 10_000, 'the CA peer to listen');
    const control = String(listening.control);
    return {
      address: String(listening.address),
      pid: child.pid!,
      log,
      setMode: async (mode) => {
        const response = await fetch(`http://${control}/mode`, { method: 'POST', body: JSON.stringify(mode) });
        if (!response.ok) throw new Error(`CA peer control: HTTP ${response.status}`);
      },
      stop: async () => {
        child.kill('SIGTERM');
        await child;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    await child;
    throw error;
  }
}
