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
  let done!: (passed: boolean) => void;
  const result = new Promise<boolean>((resolve) => (done = resolve));
  const probes = probeMatcher({ listenHost, probeHost: options.ipv6 ? '::6' : '127.0.0.6', probePort: options.probePort, onMatch: () => done(true) });
  const servers = (
    await Promise.all([options.outboundCapturePort, options.inboundCapturePort].map((port) => listen(listenHost, port, probes.onArrival)))
  ).filter((server): server is Server => server !== undefined);
  if (servers.length === 0) return false;
  probes.probe();
  const interval = boundedInterval(probes.probe, options.intervalMs ?? 1000);
  const timeout = boundedTimer(() => done(false), options.timeoutMs);
  try {
    return await result;
  } finally {
    interval.cancel();
    timeout.cancel();
    probes.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

interface ProbeMatcherOptions {
  listenHost: string;
  probeHost: string;
  probePort: number;
  onMatch: () => void;
}

/** Sends probes and matches what arrives at a capture port by the probe's source port (either may come first). */
function probeMatcher(options: ProbeMatcherOptions): { probe: () => void; onArrival: (socket: Socket) => void; destroy: () => void } {
  const sent = new Set<number>();
  const arrived = new Set<number>();
  const sockets = new Set<Socket>();
  const onArrival = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    const port = socket.remotePort;
    socket.end();
    if (port === undefined) return;
    if (sent.has(port)) options.onMatch();
    arrived.add(port);
  };
  const probe = () => {
    const socket = connect({ host: options.probeHost, port: options.probePort, localAddress: options.listenHost });
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      if (socket.localPort === undefined) return;
      if (arrived.has(socket.localPort)) options.onMatch();
      sent.add(socket.localPort);
      socket.end();
    });
  };
  return { probe, onArrival, destroy: () => sockets.forEach((socket) => socket.destroy()) };
}

/** A listener, or undefined when the port is taken (Istio goes on with the other). */
function listen(host: string, port: number, onConnection: (socket: Socket) => void): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer(onConnection);
    server.once('error', () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => resolve(server));
  });
}
