// The main job, as a user runs it: the go-control-plane discovery server, a
// local HTTP upstream, and `pilot-agent proxy sidecar` with its status server,
// readiness and Prometheus listeners on, running the real Envoy configured
// over xDS. Prints the curl lines for traffic, readiness, metrics and debug,
// then runs until Ctrl-C. `--check` runs those requests itself, stops, and
// checks no Envoy is left (exit 1 otherwise). Delta xDS by default; `--sotw` uses State of the World.
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { assertGone } from '../test/support/agent.ts';
import { LineLog } from '../test/support/lines.ts';
import { agentBin, envoyBin, nodeBin } from '../test/support/paths.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';

interface Ports { admin: number; status: number; readiness: number; prometheus: number }
interface Try { what: string; method: string; port: number; path: string; expect: number; flags?: string }

const print = (text = '') => process.stdout.write(`${text}\n`);
const checkOnly = process.argv.includes('--check');
let stopping = false;

const dir = await mkdtemp(join(tmpdir(), 'pilot-agent-demo-'));
const upstream = await startUpstream('Hello from the upstream, through Envoy started by pilot-agent.\n');
const listenerPort = await freePort();
const peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));
const ports = await pickPorts();
const args = [
  'proxy',
  'sidecar',
  '--serviceregistry',
  'Other',
  '--ip',
  '127.0.0.1',
  '--discoveryAddress',
  peer.address,
  '--configPath',
  join(dir, 'proxy'),
  '--certDir',
  join(dir, 'certs'),
  '--binaryPath',
  envoyBin,
  '--proxyAdminPort',
  String(ports.admin),
  '--statusPort',
  String(ports.status),
  '--readinessPort',
  String(ports.readiness),
  '--prometheusPort',
  String(ports.prometheus),
  '--terminationDrainDuration',
  '5s',
  ...(process.argv.includes('--sotw') ? ['--deltaXds=false'] : []),
];
const logPath = join(dir, 'agent.log');
// execa's default SIGKILL 5 s after SIGTERM would cut the agent's drain short.
const agent = execa(nodeBin, [agentBin, ...args], { reject: false, buffer: false, stdin: 'ignore', stderr: 'inherit', forceKillAfterDelay: 30_000 });
agent.stdout!.pipe(createWriteStream(logPath));
const log = new LineLog<{ msg: string; pid?: number }>(agent.stdout!);
const envoyPids = () => log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.pid!);

print(`discovery server (go-control-plane) on ${peer.address}, upstream on 127.0.0.1:${upstream.port}`);
print(`running: pilot-agent ${args.join(' ')}`);
print(`agent log (JSON lines): ${logPath}`);
await waitUntilReady();
const tries = demoRequests();
printCurls(tries);
if (checkOnly) await check(tries);
else print('\nPress Ctrl-C to stop (the agent drains Envoy for 5 s, then everything is cleaned up).');
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void shutdown(0));

/** The defaults a pod uses when they are free here; otherwise free ports, said so. */
async function pickPorts(): Promise<Ports> {
  const defaults = { admin: 15000, status: 15020, readiness: 15021, prometheus: 15090 };
  const free = await Promise.all(Object.values(defaults).map(isFree));
  if (free.every(Boolean)) return defaults;
  print('(the default ports 15000/15020/15021/15090 are taken here: using free ones)');
  return { admin: await freePort(), status: await freePort(), readiness: await freePort(), prometheus: await freePort() };
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer().once('error', () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

/** Ready as the kubelet sees it: through Envoy's readiness listener. */
async function waitUntilReady(): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    if ((await send({ what: '', method: 'GET', port: ports.readiness, path: '/healthz/ready', expect: 200 })) === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  print(`the agent never became ready; last log lines:\n${log.raw.slice(-20).join('\n')}`);
  await shutdown(1);
}

function demoRequests(): Try[] {
  const { status, readiness, prometheus } = ports;
  return [
    { what: "Through Envoy, as the app's traffic goes", method: 'GET', port: listenerPort, path: '/', expect: 200 },
    {
      what: "Readiness as the kubelet probes it, through Envoy's readiness listener",
      method: 'GET',
      port: readiness,
      path: '/healthz/ready',
      expect: 200,
      flags: '-i',
    },
    {
      what: 'Readiness on the status port (503 with the reason when not ready)',
      method: 'GET',
      port: status,
      path: '/healthz/ready',
      expect: 200,
      flags: '-i',
    },
    { what: "Metrics: the agent's (istio_agent_*) then Envoy's, merged", method: 'GET', port: status, path: '/stats/prometheus', expect: 200, flags: '-s' },
    { what: "Envoy's metrics on its Prometheus listener", method: 'GET', port: prometheus, path: '/stats/prometheus', expect: 200, flags: '-s' },
    { what: 'Debug (loopback only): Envoy epochs, pids, recent exits', method: 'GET', port: status, path: '/debug/epochs', expect: 200, flags: '-s' },
    { what: 'Debug (loopback only): the xDS relay per type', method: 'GET', port: status, path: '/debug/xds', expect: 200, flags: '-s' },
    {
      what: "Refused: Envoy's admin is not reachable through 15090",
      method: 'GET',
      port: prometheus,
      path: '/stats/prometheus/../../config_dump',
      expect: 404,
      flags: '-i --path-as-is',
    },
    {
      what: "Refused: nor the agent's quit through 15021",
      method: 'POST',
      port: readiness,
      path: '/healthz/ready/../../quitquitquit',
      expect: 404,
      flags: '-i --path-as-is',
    },
  ];
}

function printCurls(list: Try[]): void {
  print('\nReady. Try:');
  for (const item of list) {
    const method = item.method === 'GET' ? '' : `-X ${item.method} `;
    print(`\n  # ${item.what}\n  curl ${item.flags ? `${item.flags} ` : ''}${method}http://127.0.0.1:${item.port}${item.path}`);
  }
  print(
    `\n  # Drain, or stop the agent and Envoy (loopback only)\n  curl -X POST http://127.0.0.1:${ports.status}/drain\n  curl -X POST http://127.0.0.1:${ports.status}/quitquitquit`,
  );
}

/** Sends one request with the path as written (node:http does not resolve `..`); 0 when it fails. */
function send(item: Try): Promise<number> {
  return new Promise((resolve) => {
    const request = httpRequest({ host: '127.0.0.1', port: item.port, path: item.path, method: item.method, timeout: 5000 }, (response) => {
      response.resume().once('end', () => resolve(response.statusCode ?? 0));
    });
    request.once('error', () => resolve(0)).once('timeout', () => request.destroy());
    request.end();
  });
}

async function check(list: Try[]): Promise<void> {
  print('\n--check: sending each request');
  let failed = 0;
  for (const item of list) {
    const status = await send(item);
    if (status !== item.expect) failed++;
    print(`  ${status === item.expect ? 'ok  ' : 'FAIL'} ${status} ${item.method} :${item.port}${item.path}`);
  }
  await shutdown(failed ? 1 : 0);
}

/** Stops the agent with SIGTERM, as Kubernetes does, and checks its Envoys are gone. */
async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  print('\nstopping...');
  agent.kill('SIGTERM');
  const result = await agent;
  const pids = envoyPids();
  const left = await assertGone(pids).then(() => '', (error: Error) => error.message);
  await peer.stop();
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
  print(
    `agent exited with ${result.signal ? `signal ${result.signal}` : `code ${result.exitCode}`}; Envoy pid(s) ${pids.join(', ')} ${left ? `NOT gone: ${left}` : 'gone'}; ${upstream.requests} request(s) reached the upstream.`,
  );
  process.exit(left || result.exitCode !== 0 ? 1 : code);
}
