/**
 * Pods as today's Istio sets them up, without Kubernetes: each pod is a
 * network namespace on a bridge, with the agent's own `istio-iptables`
 * capture, and the agent running as uid 1337 with the injection template's
 * env (PROXY_CONFIG, CA_ADDR, the token, the roots, the downward-API values).
 * Istio's CA and istiod are the test peers, with TLS and a required token,
 * on the bridge's address. One mesh serves many pods (bench/pod-start.ts,
 * bench/fleet.ts).
 *
 * Addresses: 198.18.<run>.0/24, <run> from the pid and not in use on the
 * host (freeRun), so parallel runs meet neither each other nor the host's
 * routes; the bridge is .1, pods .2 up.
 */
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { startCaPeer, type CaPeer } from './ca-peer.ts';
import { issueServerPair, makeCsrSigner, type CsrSigner } from './csr-signer.ts';
import { inboundMtlsListener } from './istio-resources.ts';
import { openFifo } from './fifo-stdio.ts';
import { LineLog } from './lines.ts';
import { agentBin, envoyBin, nodeBin } from './paths.ts';
import { startPeer, type Peer } from './peer.ts';
import { findEnvoys, own, ownDir, releaseDir } from './processes.ts';
import { edsCluster, endpoints, routeConfig } from './resources.ts';

export const proxyUid = 1337;
export const istiodName = 'istiod.istio-system.svc';
const identity = 'spiffe://cluster.local/ns/default/sa/app';
const token = 'projected-token-for-app';
/** The app port a client dials; capture sends it to Envoy's 15006. */
export const appPort = 8080;

const ip = (...args: string[]) => execa('ip', args, { timeout: 10_000 });

export interface Mesh {
  hostIp: string;
  ca: CaPeer;
  peer: Peer;
  /** Files every pod mounts (token, roots), readable by uid 1337. */
  files: { token: string; root: string };
  /** istiod's serving pair (a test's own discovery server in front of the peer presents it). */
  tls: { cert: string; key: string };
  /** What the discovery server serves every pod (bench/soak.ts pushes changes on top of it with peer.setResources). */
  resources: unknown[];
  /** The address pods are numbered from. */
  podIp(index: number): string;
  /** Restarts the discovery server on the same address (the fleet's restart storm). */
  restartPeer(downMs: number): Promise<void>;
  stopPeer(): Promise<void>;
  startPeerAgain(): Promise<void>;
  close(): Promise<void>;
}

/** Why pods cannot be made here, or undefined. */
export async function podSkipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root for network namespaces and uid 1337';
  const probe = await execa('iptables-restore', ['--version'], { reject: false });
  return probe.exitCode === 0 ? undefined : 'iptables-restore is missing (scripts/setup-iptables.sh)';
}

/**
 * This mesh's 198.18.<run>.0/24: from the pid, past any /24 of the range the
 * host holds already. Two runs whose pids met modulo 250 (a soak beside the
 * suite did) would otherwise put the same subnet on two bridges, and
 * neither's pods reach their peers.
 */
async function freeRun(): Promise<number> {
  const { stdout } = await execa('ip', ['-4', '-o', 'addr', 'show']);
  const taken = new Set([...stdout.matchAll(/inet 198\.18\.(\d+)\./g)].map((match) => Number(match[1])));
  for (let step = 0; step < 250; step++) {
    const run = (process.pid + step) % 250;
    if (!taken.has(run)) return run;
  }
  throw new Error('every 198.18.<run>.0/24 for pod meshes is in use on this host');
}

/** The bridge, the CA and the discovery server; close() undoes all of it. */
export async function startMesh(): Promise<Mesh> {
  await using undo = new AsyncDisposableStack();
  const run = await freeRun();
  const hostIp = `198.18.${run}.1`;
  const bridge = `pab${process.pid}`;
  await ip('link', 'add', bridge, 'type', 'bridge');
  undo.defer(async () => void (await execa('ip', ['link', 'del', bridge], { reject: false })));
  await ip('addr', 'add', `${hostIp}/24`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');

  const signer: CsrSigner = await makeCsrSigner();
  undo.defer(() => signer.close());
  const dir = await mkdtemp(join(tmpdir(), 'pods-'));
  undo.defer(() => rm(dir, { recursive: true, force: true }));
  await chmod(dir, 0o755);
  const files = { token: join(dir, 'istio-token'), root: join(dir, 'root-cert.pem') };
  await writeFile(files.token, token, { mode: 0o644 });
  await writeFile(files.root, signer.root, { mode: 0o644 });
  const tls = await issueServerPair(signer, istiodName);

  const ca = await startCaPeer({ ca: signer.files, tls, token, identity, address: `${hostIp}:0` });
  undo.defer(() => ca.stop());
  const upstream = await startHostUpstream(hostIp);
  undo.defer(() => upstream.close());
  const peerArgs = ['--tls-cert', tls.cert, '--tls-key', tls.key, '--require-token', token];
  const resources = podResources(hostIp, upstream.port);
  let peer = await startPeer(resources, { address: `${hostIp}:0`, args: peerArgs });
  const address = peer.address;
  undo.defer(() => peer.stop());
  const startPeerAgain = async () => void (peer = await startPeer(resources, { address, args: peerArgs }));

  const cleanup = undo.move();
  return {
    hostIp,
    ca,
    tls,
    get peer() {
      return peer;
    },
    files,
    resources,
    podIp: (index) => `198.18.${run}.${index + 2}`,
    stopPeer: () => peer.stop(),
    startPeerAgain,
    restartPeer: async (downMs) => {
      await peer.stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await startPeerAgain();
    },
    close: () => cleanup.disposeAsync(),
  };
}

/** What istiod would send a pod: inbound HTTPS on 15006 with the CA's certificate over SDS, to an upstream on the host. */
function podResources(hostIp: string, upstreamPort: number): unknown[] {
  const listener = inboundMtlsListener({ name: 'virtualInbound', port: 15_006, routeName: 'inbound', requireClientCertificate: false }) as {
    address: { socket_address: { address: string } };
    filter_chains: { transport_socket: { typed_config: { common_tls_context: Record<string, unknown> } } }[];
  };
  listener.address.socket_address.address = '0.0.0.0';
  delete listener.filter_chains[0]!.transport_socket.typed_config.common_tls_context.combined_validation_context;
  return [
    listener,
    routeConfig('inbound', [{ prefix: '/', cluster: 'app' }]),
    edsCluster('app'),
    onHost(endpoints('app', upstreamPort), hostIp),
  ];
}

/** The endpoint on the bridge's address: the pod's loopback is not the host's. */
function onHost(assignment: unknown, hostIp: string): unknown {
  const copy = assignment as { endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[] };
  copy.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address.address = hostIp;
  return copy;
}

async function startHostUpstream(hostIp: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => response.end('hello from the app'));
  await new Promise<void>((resolve) => server.listen(0, hostIp, resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => (server.closeAllConnections(), new Promise((resolve) => server.close(() => resolve()))),
  };
}

export interface PodLogEntry {
  time: number;
  msg: string;
  [key: string]: unknown;
}

export interface Pod {
  name: string;
  ip: string;
  agentPid: number;
  /** performance.now() at the agent's exec. */
  execAt: number;
  /** Date.now() at the agent's exec, to read the log's times against. */
  execWallMs: number;
  log: LineLog<PodLogEntry>;
  stderr(): string;
  /** Set once the agent has exited. */
  exitCode(): number | undefined;
  /** Envoys of this pod's agent, found in /proc. */
  envoys(): number[];
  stop(): Promise<void>;
}

export interface PodOptions {
  /** Another build's entry point (bench comparisons); default this checkout's. */
  bin?: string;
  /** Extra env over the template's. */
  env?: Record<string, string>;
  /** Another agent binary in the same pod (bench comparisons, e.g. Istio's own: bench/istio-agent.ts). */
  foreign?: ForeignAgent;
  /** Exec the entry point itself, its shebang's flags and all, as the image does (node from .tools/bin on the PATH). */
  viaShebang?: boolean;
  /** Flags for node before the entry point (not with viaShebang). */
  nodeArgs?: string[];
  /** ProxyConfig fields over the template's (a field set to undefined is left out). */
  proxyConfig?: Record<string, unknown>;
  /** The downward-API annotations file; default the injection's status annotation. */
  annotations?: string;
  /** The agent's stdout and stderr are FIFOs uid 1337 can open again by path, as a container runtime gives them. */
  fifoStdio?: boolean;
}

/**
 * How another agent runs in a pod: given the pod's dir (its cwd, owned by
 * uid 1337) and the template's env, it lays out the files it expects there
 * and says what to exec, with which env.
 */
export type ForeignAgent = (pod: {
  dir: string;
  env: Record<string, string>;
  mesh: Mesh;
  netns: { name: string; ip: string };
}) => Promise<{ argv: string[]; env: Record<string, string> }>;

/** A peer's host:port with istiod's name for the host (the pod's hosts file maps it). */
export const byName = (address: string) => `${istiodName}:${address.slice(address.lastIndexOf(':') + 1)}`;

/** A namespace on the mesh's bridge with capture applied, not yet running an agent. */
export async function makePodNamespace(mesh: Mesh, index: number): Promise<{ name: string; ip: string; remove(): Promise<void> }> {
  const name = `pa-pod-${process.pid}-${index}`;
  const outside = `pp${process.pid}x${index}`.slice(0, 15);
  const podIp = mesh.podIp(index);
  const remove = async () => {
    await execa('ip', ['netns', 'del', name], { reject: false });
    // `ip netns exec` mounts files from here over /etc (the pod's hosts file); `ip netns del` leaves it.
    await rm(`/etc/netns/${name}`, { recursive: true, force: true });
  };
  try {
    await ip('netns', 'add', name);
    // istiod by its name, as a cluster's DNS answers a pod: the agents dial it by name, and check
    // the CA's certificate against CA_ADDR's host (Istio's rule).
    await mkdir(`/etc/netns/${name}`, { recursive: true });
    await writeFile(`/etc/netns/${name}/hosts`, `127.0.0.1 localhost\n::1 localhost\n${mesh.hostIp} ${istiodName}\n`);
    await ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
    await ip('link', 'set', outside, 'master', `pab${process.pid}`, 'up');
    await ip('-n', name, 'addr', 'add', `${podIp}/24`, 'dev', 'eth0');
    await ip('-n', name, 'link', 'set', 'eth0', 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    await ip('-n', name, 'route', 'add', 'default', 'via', mesh.hostIp);
    // The injection template's init container, with the agent's own capture.
    await execa(
      'ip',
      [
        'netns',
        'exec',
        name,
        nodeBin,
        agentBin,
        'istio-iptables',
        '-p',
        '15001',
        '-z',
        '15006',
        '-u',
        String(proxyUid),
        '-m',
        'REDIRECT',
        '-i',
        '*',
        '-x',
        '',
        '-b',
        '*',
        '-d',
        '15090,15021,15020',
      ],
      { timeout: 20_000 },
    );
  } catch (error) {
    await remove();
    throw error;
  }
  return { name, ip: podIp, remove };
}

/** Execs the agent in the namespace as uid 1337, with the template's env; the clock starts at exec. */
export async function startPodAgent(mesh: Mesh, netns: { name: string; ip: string }, index: number, options: PodOptions = {}): Promise<Pod> {
  const dir = await mkdtemp(join(tmpdir(), `pod-${index}-`));
  ownDir(dir, { remove: true });
  await mkdir(join(dir, 'etc/istio/proxy'), { recursive: true });
  // The downward-API volume the template mounts.
  await mkdir(join(dir, 'etc/istio/pod'));
  await writeFile(join(dir, 'etc/istio/pod/labels'), `app="app"\nversion="v1"\n`);
  await writeFile(join(dir, 'etc/istio/pod/annotations'), options.annotations ?? `sidecar.istio.io/status="{}"\n`);
  await chown(dir, proxyUid, proxyUid);
  await chown(join(dir, 'etc'), proxyUid, proxyUid);
  await chown(join(dir, 'etc/istio'), proxyUid, proxyUid);
  await chown(join(dir, 'etc/istio/proxy'), proxyUid, proxyUid);
  const env: Record<string, string> = {
    PATH: `${options.viaShebang ? `${dirname(nodeBin)}:` : ''}${process.env.PATH ?? '/usr/bin:/bin'}`,
    PROXY_CONFIG: JSON.stringify({
      discoveryAddress: byName(mesh.peer.address),
      statusPort: 15_020,
      terminationDrainDuration: '1s',
      drainDuration: '1s',
      parentShutdownDuration: '3s',
      ...options.proxyConfig,
    }),
    CA_ADDR: byName(mesh.ca.address),
    ISTIOD_SAN: istiodName,
    PILOT_CERT_PROVIDER: 'istiod',
    XDS_ROOT_CA: mesh.files.root,
    CA_ROOT_CA: mesh.files.root,
    POD_NAME: `app-${index}`,
    POD_NAMESPACE: 'default',
    INSTANCE_IP: netns.ip,
    SERVICE_ACCOUNT: 'app',
    HOST_IP: mesh.hostIp,
    ISTIO_META_CLUSTER_ID: 'Kubernetes',
    ISTIO_META_MESH_ID: 'cluster.local',
    ISTIO_META_WORKLOAD_NAME: 'app',
    ISTIO_META_APP_CONTAINERS: 'app',
    TRUST_DOMAIN: 'cluster.local',
    ...options.env,
  };
  const ours = [
    ...(options.viaShebang ? [] : [nodeBin, ...(options.nodeArgs ?? [])]), options.bin ?? agentBin, 'proxy', 'sidecar', '--domain', 'default.svc.cluster.local',
    '--serviceregistry', 'Kubernetes', '--proxyLogLevel', 'warning',
    '--configPath', join(dir, 'etc/istio/proxy'), '--binaryPath', envoyBin,
    '--xdsTokenFile', mesh.files.token, '--podInfoDir', join(dir, 'etc/istio/pod'), '--sdsSocket', join(dir, 'etc/istio/proxy/sds.sock'),
  ];
  const command = options.foreign ? await options.foreign({ dir, env, mesh, netns }) : { argv: ours, env };
  const execWallMs = Date.now();
  const fifos = options.fifoStdio ? [await openFifo(dir, 'agent-stdout'), await openFifo(dir, 'agent-stderr')] : undefined;
  for (const name of fifos ? ['agent-stdout', 'agent-stderr'] : []) await chown(join(dir, name), proxyUid, proxyUid);
  const execAt = performance.now();
  const child: ResultPromise = execa(
    'ip',
    ['netns', 'exec', netns.name, 'setpriv', `--reuid=${proxyUid}`, `--regid=${proxyUid}`, '--clear-groups', '--', ...command.argv],
    {
      reject: false,
      buffer: false,
      stdin: 'ignore',
      cwd: dir,
      env: command.env,
      extendEnv: false,
      detached: true,
      forceKillAfterDelay: 20_000,
      // A number is a descriptor the child gets as is (execa's types let only 3-9 through).
      ...(fifos ? { stdout: fifos[0]!.writeFd as 3, stderr: fifos[1]!.writeFd as 3 } : {}),
    },
  );
  for (const fifo of fifos ?? []) fifo.release();
  const [stdout, stderrStream] = fifos ? [fifos[0]!.reader, fifos[1]!.reader] : [child.stdout!, child.stderr!];
  own(child, child, `pod ${netns.name}`);
  let stderr = '';
  stderrStream.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const log = new LineLog<PodLogEntry>(stdout, () => `the pod's agent exited (${child.exitCode ?? '?'}): ${stderr.trim() || '(no stderr)'}`);
  const envoys = () => findEnvoys({ parent: child.pid, marks: [dir] });
  return {
    name: netns.name,
    ip: netns.ip,
    agentPid: child.pid!,
    execAt,
    execWallMs,
    log,
    stderr: () => stderr,
    exitCode: () => child.exitCode ?? undefined,
    envoys,
    stop: async () => {
      child.kill('SIGTERM');
      await child;
      for (const pid of envoys()) process.kill(pid, 'SIGKILL');
      releaseDir(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Polls the pod's readiness over the pod network, as the kubelet would; ms from exec to the first 200. */
export async function untilPodReady(pod: Pod, timeoutMs = 60_000, periodMs = 10): Promise<number> {
  const deadline = pod.execAt + timeoutMs;
  for (;;) {
    const status = await fetch(`http://${pod.ip}:15021/healthz/ready`, { signal: AbortSignal.timeout(1000) }).then((r) => r.status, () => 0);
    if (status === 200) return performance.now() - pod.execAt;
    if (pod.exitCode() !== undefined || performance.now() > deadline)
      throw new Error(
        `pod ${pod.name} not ready (exit code ${pod.exitCode() ?? 'none yet'}, ${timeoutMs} ms at most); stderr: ${pod.stderr().trim()}; log tail:\n${pod.log.raw.slice(-10).join('\n')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, periodMs));
  }
}

/** One HTTPS request to the app port from outside the pod: capture sends it to Envoy, which presents the CA's certificate. */
export async function requestThroughCapture(pod: { ip: string }, timeoutMs = 2000, agent: HttpsAgent | false = false): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsRequest({ host: pod.ip, port: appPort, path: '/', rejectUnauthorized: false, timeout: timeoutMs, agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode === 200));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
