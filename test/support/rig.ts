import { startAgent, type AgentOptions, type RunningAgent } from './agent.ts';
import { startPeer, type Peer } from './peer.ts';
import { freePort } from './ports.ts';
import { startUpstream, type Upstream } from './upstream.ts';

/** Ports a rig picks before its discovery server starts, so the resources can name them. */
export interface RigPorts {
  listenerPort: number;
  statusPort: number;
  readinessPort: number;
  /** The upstream behind Envoy's listener; 0 for a rig without one. */
  upstreamPort: number;
}

export interface RigSpec {
  /** What the upstream answers; no upstream when absent. */
  upstreamBody?: string;
  /** A discovery peer started for the rig, serving these resources, or one the test already runs. */
  discovery: { resources(ports: RigPorts): unknown[]; peerArgs?: string[] } | { address: string };
  /** The agent's flags and env besides the discovery address and the rig's ports. */
  agent?: Pick<AgentOptions, 'args' | 'env'>;
  /** Return only once the agent's status server listens. */
  waitForStatusServer?: boolean;
}

export interface Rig extends Omit<RigPorts, 'upstreamPort'>, AsyncDisposable {
  /** Absent without `upstreamBody`. */
  upstream?: Upstream;
  /** Absent when the test gave a discovery address. */
  peer?: Peer;
  agent: RunningAgent;
  /** Stops the agent (SIGTERM), then the peer and upstream, then whatever the caller put on `undo` first. */
  close(): Promise<void>;
}

/**
 * The one rig starter of the e2e tests: an upstream, a discovery peer and the
 * agent with status and readiness ports. Parts a preset sets up before (a CA,
 * certificate files) are already on `undo`: a start that fails undoes them all
 * in reverse, and `close` does the same later.
 */
export async function startRig(undo: AsyncDisposableStack, spec: RigSpec): Promise<Rig> {
  const upstream = spec.upstreamBody === undefined ? undefined : await startUpstream(spec.upstreamBody);
  if (upstream) undo.defer(() => upstream.close());
  const ports: RigPorts = { listenerPort: await freePort(), statusPort: await freePort(), readinessPort: await freePort(), upstreamPort: upstream?.port ?? 0 };
  const peer = 'resources' in spec.discovery ? await startPeer(spec.discovery.resources(ports), { args: spec.discovery.peerArgs }) : undefined;
  if (peer) undo.defer(() => peer.stop());
  const discoveryAddress = peer?.address ?? (spec.discovery as { address: string }).address;
  const portArgs = ['--statusPort', String(ports.statusPort), '--readinessPort', String(ports.readinessPort)];
  const agent = await startAgent({ discoveryAddress, env: spec.agent?.env, args: [...portArgs, ...(spec.agent?.args ?? [])] });
  undo.defer(async () => {
    await agent.stop('SIGTERM');
  });
  if (spec.waitForStatusServer) await agent.log.waitFor((entry) => entry.msg === 'status server listening', 15_000, 'the status server');
  const started = undo.move();
  const close = () => started.disposeAsync();
  const { listenerPort, statusPort, readinessPort } = ports;
  return { listenerPort, statusPort, readinessPort, upstream, peer, agent, close, [Symbol.asyncDispose]: close };
}
