import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { KeepaliveOptions } from '../../grpc/keepalive.ts';
import type { XdsStats } from '../relay/stats.ts';
import { dialUpstream, UpstreamDialError, type UpstreamStream } from './session.ts';
import { type UpstreamOptions } from './material.ts';

/**
 * The held certificate the discovery server last refused: later dials leave
 * it out and let the token speak, as Istio's sidecar (which never presents
 * the CA's certificate) would, until the CA issues another.
 */
export class RefusedCertificate {
  #chain: Buffer | undefined;

  refuse(chain: Buffer | undefined): void {
    this.#chain = chain;
  }

  /** `upstream` with a refused certificate held back. */
  filter(upstream: UpstreamOptions): UpstreamOptions {
    const { heldCertificate } = upstream;
    if (!heldCertificate) return upstream;
    return { ...upstream, heldCertificate: () => {
      const held = heldCertificate();
      return held && this.#chain?.equals(held.chain) ? undefined : held;
    } };
  }
}

export interface UpstreamDialOptions {
  upstream: UpstreamOptions;
  refused: RefusedCertificate;
  path: string;
  keepalive: KeepaliveOptions;
  clock: Clock;
  stats: XdsStats;
  /** The stream's logger. */
  logger: Logger;
  /** The dial itself (a fake in tests). */
  dial?: typeof dialUpstream;
}

/**
 * One dial of the discovery server, saying which credential it carried (the
 * log line and the dial counter) and, loudly, when the server refused our
 * client certificate: that is a trust problem on its side, not an outage.
 */
export async function dialWithCredentials(options: UpstreamDialOptions): Promise<UpstreamStream> {
  const { stats, logger, refused } = options;
  const presenting = options.upstream.heldCertificate?.();
  try {
    const upstream = await (options.dial ?? dialUpstream)(refused.filter(options.upstream), {
      path: options.path,
      keepalive: options.keepalive,
      now: options.clock.now(),
    });
    if (upstream.tokenProblem) logger.warn({ reason: upstream.tokenProblem }, 'token left out: unreadable, and the workload certificate speaks for us');
    if (!upstream.held.present && upstream.held.reason === 'expired') logger.warn('the workload certificate has expired: the token alone speaks for us');
    logger.info({ credential: upstream.credential }, 'connected to the discovery server');
    stats.upstreamDial(upstream.credential, 'connected');
    return upstream;
  } catch (error) {
    if (!(error instanceof UpstreamDialError)) throw error;
    if (error.tls === 'client-certificate-refused') {
      const fallBack = options.upstream.policy === 'TLS'; // MUTUAL_TLS has nothing but its files
      if (fallBack) refused.refuse(presenting?.chain);
      const next = fallBack ? 'the token only, until the CA issues another certificate' : 'the same files, until they change';
      logger.error({ credential: error.credential, reason: error.message, next }, 'the discovery server refused our client certificate');
    }
    stats.upstreamDial(error.credential, error.tls === 'client-certificate-refused' ? 'certificate_refused' : 'failed');
    throw error;
  }
}
