import { request } from 'node:https';
import autocannon from 'autocannon';

export interface LoadResult {
  ok: number;
  failed: number;
  /** The first few failures, to say what went wrong. */
  samples: string[];
}

/**
 * Keep-alive load with autocannon: `connections` persistent connections, pipelining 1,
 * for `durationS`, or until `until` aborts when given (`durationS` is then the cap).
 * `onOk` is told of each 2xx as it comes, for a test that stops the load once enough ran.
 */
export async function keepAliveLoad(
  url: string,
  connections: number,
  durationS: number,
  until?: AbortSignal,
  onOk?: () => void,
): Promise<LoadResult & { raw: unknown }> {
  const run = autocannon({ url, connections, duration: durationS, timeout: 5 });
  until?.addEventListener('abort', () => run.stop(), { once: true });
  if (onOk) run.on('response', (_client, status) => void (status >= 200 && status < 300 && onOk()));
  const result = await run;
  const failed = result.errors + result.non2xx;
  return { ok: result['2xx'], failed, samples: failed ? [`errors ${result.errors}, timeouts ${result.timeouts}, non2xx ${result.non2xx}`] : [], raw: result };
}

/** One fresh TLS connection per request, `parallel` at a time, until `durationS` is over or `until` aborts; `onOk` as above. */
export async function newConnectionLoad(url: string, parallel: number, durationS: number, until?: AbortSignal, onOk?: () => void): Promise<LoadResult> {
  const result: LoadResult = { ok: 0, failed: 0, samples: [] };
  const deadline = Date.now() + durationS * 1000;
  const worker = async () => {
    while (Date.now() < deadline && !until?.aborted) {
      const outcome = await getOnce(url);
      if (outcome === 'ok') (result.ok++, onOk?.());
      else {
        result.failed++;
        if (result.samples.length < 5) result.samples.push(outcome);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return result;
}

function getOnce(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, rejectUnauthorized: false, servername: 'localhost', timeout: 5000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode === 200 ? 'ok' : `HTTP ${response.statusCode}`));
      response.on('error', (error) => resolve(error.message));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error) => resolve(error.message));
    req.end();
  });
}
