import type { ProbeAction } from './config.ts';

type HttpAction = Extract<ProbeAction, { kind: 'http' }>;

/** One hop's answer: the status and, for a redirect, where it points. */
export interface HopAnswer {
  status: number;
  location?: string;
}

/** The kubelet gives up after this many redirects. */
export const maxRedirects = 10;

/**
 * Follows the app's redirects as the kubelet (and Istio's agent) do: to the
 * same host only, at most 10 times. A redirect elsewhere, or one without a
 * Location, is a success (200): the kubelet would count it as one, and a 3xx
 * without Location is no answer to hand back.
 */
export async function followRedirects(action: HttpAction, get: (hop: HttpAction) => Promise<HopAnswer>): Promise<number> {
  let hop = action;
  for (let redirects = 0; ; redirects++) {
    const answer = await get(hop);
    if (answer.status < 300 || answer.status >= 400) return answer.status;
    const next = answer.location === undefined ? undefined : sameHostHop(hop, answer.location);
    if (!next) return 200;
    if (redirects + 1 > maxRedirects) throw new Error(`stopped after ${maxRedirects} redirects`);
    hop = next;
  }
}

/** The next hop when `location` stays on the probed host; its scheme, port and path may change. */
function sameHostHop(hop: HttpAction, location: string): HttpAction | undefined {
  const base = `${hop.scheme}://${hop.host.includes(':') ? `[${hop.host}]` : hop.host}:${hop.port}${hop.path}`;
  let url: URL;
  try {
    url = new URL(location, base);
  } catch {
    return undefined;
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const scheme = url.protocol.slice(0, -1);
  if (host !== hop.host || (scheme !== 'http' && scheme !== 'https')) return undefined;
  const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
  return { ...hop, scheme, port, path: `${url.pathname}${url.search}` };
}
