import { connect, createServer, type Server, type Socket } from 'node:net';
import { boundedInterval, boundedTimer } from '../shared/clock.ts';

export interface ValidationOptions {
  /** The pod's first address is IPv6: check over ::1 and ::6, as Istio does. */
  ipv6: boolean;
  outboundCapturePort: number;
  inboundCapturePort: number;
  /** The port the probe connects to; nothing listens there. */
  probePort: number;
  timeoutMs: number;
  /** Time between probe connections (Istio: 1 s). */
  intervalMs?: number;
}

/**
 * Istio's validation (the istio-validation init container of Istio CNI):
 * listen on loopback at the two capture ports, connect as this process's
 * user from loopback to 127.0.0.6 (::6) at the probe port, and pass when
 * that connection arrives at a capture port, which only a redirect can do.
 * Istio matches the original port (SO_ORIGINAL_DST); Node cannot read it,
 * so we match the probe's own source port instead, which proves the same.
 */
export async function validateCapture(options: ValidationOptions): Promise<boolean> {
  const listenHost = options.ipv6 ? '::1' : '127.0.0.1';
  const probeHost = options.ipv6 ? '::6' : '127.0.0.6';
  const sent = new Set<number>();
  const arrived = new Set<number>();
  const sockets = new Set<Socket>();
  let done!: (passed: boolean) => void;
  const result = new Promise<boolean>((resolve) => (done = resolve));
  const onArrival = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    const port = socket.remotePort;
    socket.end();
    if (port === undefined) return;
    if (sent.has(port)) done(true);
    arrived.add(port);
  };
  const servers = (await Promise.all([options.outboundCapturePort, options.inboundCapturePort].map((port) => listen(listenHost, port, onArrival)))).filter((server): server is Server => server !== undefined);
  if (servers.length === 0) return false;
  const probe = () => {
    const socket = connect({ host: probeHost, port: options.probePort, localAddress: listenHost });
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      if (socket.localPort === undefined) return;
      if (arrived.has(socket.localPort)) done(true);
      sent.add(socket.localPort);
      socket.end();
    });
  };
  probe();
  const interval = boundedInterval(probe, options.intervalMs ?? 1000);
  const timeout = boundedTimer(() => done(false), options.timeoutMs);
  try {
    return await result;
  } finally {
    interval.cancel();
    timeout.cancel();
    for (const socket of sockets) socket.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** A listener, or undefined when the port is taken (Istio goes on with the other). */
function listen(host: string, port: number, onConnection: (socket: Socket) => void): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer(onConnection);
    server.once('error', () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => resolve(server));
  });
}
