import type { StatusDeps, StatusResponse } from './handler.ts';

/**
 * /debug/sds: which secrets each SDS stream holds, their serials and
 * expiry, and what streams wait for and why. Never key material: the SDS
 * server's debug view carries names, serials, dates and file paths only.
 */
export function debugSds(deps: StatusDeps): StatusResponse {
  const body = deps.sds ? deps.sds.debug() : { error: 'the SDS server is not running' };
  return { status: deps.sds ? 200 : 404, contentType: 'application/json', body: `${JSON.stringify(body, null, 2)}\n` };
}
