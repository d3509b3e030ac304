// The main job, end to end: the go-control-plane discovery server, a local
// HTTP upstream, and pilot-agent running the real Envoy configured over xDS.
// Prints a curl that goes through Envoy and runs until Ctrl-C.
import { startAgent } from '../test/support/agent.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';

const upstream = await startUpstream('Hello from the upstream, through Envoy started by pilot-agent.\n');
const listenerPort = await freePort();
const peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));
const agent = await startAgent({ discoveryAddress: peer.address, args: process.argv.includes('--delta') ? ['--deltaXds'] : [] });
const print = (text: string) => process.stdout.write(`${text}\n`);

print(`discovery server (go-control-plane) on ${peer.address}, upstream on 127.0.0.1:${upstream.port}`);
await agent.log.waitFor((entry) => entry.msg === 'envoy started', 20_000, 'Envoy to start');
print(`pilot-agent started Envoy (admin on 127.0.0.1:${agent.adminPort}); waiting for its listener...`);
await waitForListener(listenerPort);
print(`\nReady. Try:\n\n  curl http://127.0.0.1:${listenerPort}/\n\nPress Ctrl-C to stop (the agent drains Envoy, then everything is cleaned up).`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    print('\nstopping...');
    void shutdown();
  });
}

async function shutdown(): Promise<void> {
  const result = await agent.stop('SIGTERM');
  await peer.stop();
  await upstream.close();
  print(`agent exited with code ${result.exitCode}; ${upstream.requests} request(s) reached the upstream.`);
  process.exit(result.exitCode ?? 1);
}

async function waitForListener(port: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const response = await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined);
    if (response?.status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Envoy's listener on ${port} did not come up; agent log:\n${agent.log.raw.slice(-20).join('\n')}`);
}
