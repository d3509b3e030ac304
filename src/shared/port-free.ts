import { createServer } from 'node:net';
import { badFlag } from './errors.ts';

/**
 * A TCP port someone else holds, found before anything that would bind it
 * starts: bad input, named by the flag that chose it. A port taken between
 * this check and the real bind fails that bind, with the same flag.
 * `host` absent: every address, as a server listening on the port alone binds.
 */
export async function checkPortFree({ flag, host, port }: { flag: string; host?: string; port: number }): Promise<void> {
  const error = await bindError(port, host);
  if (error) throw badFlag(flag, `port ${port}${host ? ` on ${host}` : ''} is not free (${error})`);
}

function bindError(port: number, host: string | undefined): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
