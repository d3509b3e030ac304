import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { KeepaliveOptions } from './keepalive.ts';
import type { XdsStats } from './stats.ts';
import { dialUpstream, UpstreamDialError, type UpstreamOptions, type UpstreamStream } from './upstream.ts';

export interface UpstreamDialOptions {
  upstream: UpstreamOptions;
  path: string;
  keepalive: KeepaliveOptions;
  clock: Clock;
  stats: XdsStats;
  /** The stream's logger. */
  logger: Logger;
}

/**
 * One dial of the discovery server, saying which credential it carried (the
 * log line and the dial counter) and, loudly, when the server refused our
 * client certificate: that is a trust problem on its side, not an outage.
 */
export async function dialWithCredentials(options: UpstreamDialOptions): Promise<UpstreamStream> {
  const { stats, logger } = options;
  try {
    const upstream = await dialUpstream(options.upstream, { path: options.path, keepalive: options.keepalive, now: options.clock.now() });
    if (upstream.tokenProblem) logger.warn({ reason: upstream.tokenProblem }, 'token left out: unreadable, and the workload certificate speaks for us');
    if (!upstream.held.present && upstream.held.reason === 'expired') logger.warn('the workload certificate has expired: the token alone speaks for us');
    logger.info({ credential: upstream.credential }, 'connected to the discovery server');
    stats.upstreamDial(upstream.credential, 'connected');
    return upstream;
  } catch (error) {
    if (!(error instanceof UpstreamDialError)) throw error;
    if (error.tls === 'client-certificate-refused') logger.error({ credential: error.credential, reason: error.message }, 'the discovery server refused our client certificate');
    stats.upstreamDial(error.credential, error.tls === 'client-certificate-refused' ? 'certificate_refused' : 'failed');
    throw error;
  }
}
