import { createServer, type Server } from 'node:http';

export interface Upstream {
  port: number;
  requests: number;
  close(): Promise<void>;
}

/** A local HTTP server that answers every request with `body`. */
export async function startUpstream(body: string): Promise<Upstream> {
  const state = { requests: 0 };
  const server: Server = createServer((_request, response) => {
    state.requests++;
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    get requests() {
      return state.requests;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
