// What the xDS benches share: the control-plane child (bench/xds-plane-child.ts)
// with the IPC round trip to it, and the relay child (bench/xds-relay-child.ts),
// optionally under other Node flags and variables (bench/relay-flags.ts).
import { execa, execaNode } from 'execa';
import { AdsTestClient, sotwRequest } from '../test/support/ads-client.ts';
import { typeUrl, type PlaneCommand } from './xds-plane.ts';

const ecdsType = 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig';

/** The control-plane child and the IPC round trip to it. */
export class Plane {
  readonly #child;

  /** `exec` runs it elsewhere (a network namespace), listening on `host`. */
  constructor(host = '127.0.0.1', exec: string[] = []) {
    const script = new URL('./xds-plane-child.ts', import.meta.url).pathname;
    this.#child = execa(exec[0] ?? process.execPath, [...exec.slice(1), ...(exec.length ? [process.execPath] : []), script, host], {
      ipc: true,
      stdout: 'inherit',
      stderr: 'inherit',
      reject: false,
    });
  }

  async port(): Promise<number> {
    return ((await this.#child.getOneMessage()) as { port: number }).port;
  }

  /** Opens a client through `target` under the name `client` and waits until the plane knows it. */
  async connect(target: string, client: string, autoAck = true, askEcds = false): Promise<AdsTestClient> {
    const ads = new AdsTestClient(target);
    ads.autoAck = autoAck;
    const known = this.#child.getOneMessage({ filter: (message) => (message as { connected?: string }).connected === client });
    ads.send(sotwRequest({ typeUrl, nodeId: client }));
    await known;
    // As an Envoy with Wasm plugins: the relay then sniffs every response's type.
    if (askEcds) ads.send(sotwRequest({ typeUrl: ecdsType, nodeId: client }));
    return ads;
  }

  async push(client: string, bytes: number, waitForAck = true): Promise<number> {
    const answer = this.#child.getOneMessage({ filter: (message) => typeof (message as { ms?: number }).ms === 'number' });
    await this.#child.sendMessage({ client, bytes, waitForAck } satisfies PlaneCommand);
    return ((await answer) as { ms: number }).ms;
  }

  async stop(): Promise<void> {
    await this.#child.sendMessage({ client: '', bytes: 0, waitForAck: false, stop: true } satisfies PlaneCommand);
    await this.#child;
  }
}

/** The relay alone in a fresh process, as in the agent, so its memory figures are its own. */
export async function startRelay(
  socket: string,
  host: string,
  port: number,
  keep: 'keep' | 'nokeep' | 'wasm',
  node: { args?: string[]; env?: Record<string, string> } = {},
) {
  const script = new URL('./xds-relay-child.ts', import.meta.url).pathname;
  const child = execaNode(script, [socket, String(port), host, keep], {
    buffer: false,
    reject: false,
    nodeOptions: [...process.execArgv, ...(node.args ?? [])],
    env: node.env,
  });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return { pid: child.pid!, stop: async () => (child.kill('SIGTERM'), await child) };
}

