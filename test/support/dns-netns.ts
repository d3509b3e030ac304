/**
 * What the DNS e2e tests run inside a network namespace: a resolver standing
 * in for the cluster's DNS, and an app-side client. Both use dns-packet and
 * Node's resolvers (getaddrinfo and c-ares), so no dig is needed.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { LineLog } from './lines.ts';
import { nodeBin, repoRoot } from './paths.ts';
import { own } from './processes.ts';

const dnsPacketPath = join(repoRoot, 'node_modules', 'dns-packet', 'index.js');
/** The test resolver's address: where resolv.conf points, as the cluster DNS would be. */
export const resolverIp = '127.0.0.53';
/** The uid the app's clients run as; the agent runs as root, which the capture rules exclude. */
export const appUid = 65534;

/** Answers `external.test` (one A) and `big.test` (100 A: truncated over UDP), NXDOMAIN else; logs each query. */
const resolverScript = `
const { createSocket } = require('node:dgram');
const { createServer } = require('node:net');
const packet = require(${JSON.stringify(dnsPacketPath)});
function answer(message, proto) {
  const query = packet.decode(message);
  const question = query.questions[0];
  console.log(JSON.stringify({ event: 'query', proto, name: question.name, type: question.type }));
  const ips = question.type !== 'A' ? [] : question.name === 'external.test' ? ['198.51.100.7'] : question.name === 'big.test' ? Array.from({ length: 100 }, (_, i) => '198.51.100.' + (i + 1)) : undefined;
  const reply = (answers, flags) => packet.encode({ id: query.id, type: 'response', flags: flags | packet.RECURSION_AVAILABLE, questions: query.questions, answers });
  if (!ips) return reply([], 3);
  const answers = ips.map((ip) => ({ type: 'A', name: question.name, ttl: 60, data: ip }));
  const full = reply(answers, 0);
  return proto === 'udp' && full.length > 512 ? reply([], packet.TRUNCATED_RESPONSE) : full;
}
const udp = createSocket('udp4');
udp.on('message', (message, from) => udp.send(answer(message, 'udp'), from.port, from.address));
const tcp = createServer((socket) => {
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
      const response = answer(buffered.subarray(2, 2 + buffered.readUInt16BE(0)), 'tcp');
      buffered = buffered.subarray(2 + buffered.readUInt16BE(0));
      const length = Buffer.alloc(2);
      length.writeUInt16BE(response.length);
      socket.write(Buffer.concat([length, response]));
    }
  });
  socket.on('error', () => {});
});
udp.bind(53, ${JSON.stringify(resolverIp)}, () => tcp.listen(53, ${JSON.stringify(resolverIp)}, () => console.log(JSON.stringify({ event: 'ready' }))));
`;

export interface Resolver {
  log: LineLog<{ event: string; proto?: string; name?: string }>;
  stop(): Promise<void>;
}

/** Starts the test resolver inside the namespace. */
export async function startResolver(netns: string): Promise<Resolver> {
  const child: ResultPromise = execa('ip', ['netns', 'exec', netns, nodeBin, '-e', resolverScript], { reject: false, buffer: false, stdin: 'ignore', stderr: 'inherit' });
  own(child, child, `DNS resolver in ${netns}`);
  const log = new LineLog<{ event: string; proto?: string; name?: string }>(child.stdout!);
  const stop = async () => {
    child.kill('SIGTERM');
    await child;
  };
  await log.waitFor((entry) => entry.event === 'ready', 10_000, 'the test resolver to listen').catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { log, stop };
}

/** /etc/netns/<name>/resolv.conf, which `ip netns exec` mounts over /etc/resolv.conf; removed by the returned function. */
export async function writeNetnsResolvConf(netns: string): Promise<() => Promise<void>> {
  const dir = join('/etc/netns', netns);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'resolv.conf'), `nameserver ${resolverIp}\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:2 attempts:1\n`);
  return () => rm(dir, { recursive: true, force: true });
}

/**
 * Istio's DNS capture, the minimum of it (until istio-iptables --redirect-dns lands on this
 * branch): the app's UDP and TCP port 53 go to the agent's 15053; root (the agent here) is
 * left alone so its own upstream queries are not looped back.
 */
export async function addDnsCapture(netns: string, proxyUid = 0): Promise<void> {
  for (const protocol of ['udp', 'tcp']) {
    await execa('ip', ['netns', 'exec', netns, 'iptables', '-t', 'nat', '-A', 'OUTPUT', '-p', protocol, '--dport', '53', '-m', 'owner', '--uid-owner', String(proxyUid), '-j', 'RETURN'], { timeout: 10_000 });
    await execa('ip', ['netns', 'exec', netns, 'iptables', '-t', 'nat', '-A', 'OUTPUT', '-p', protocol, '--dport', '53', '-j', 'REDIRECT', '--to-ports', '15053'], { timeout: 10_000 });
  }
}

export type ClientOp =
  | { op: 'lookup'; name: string }
  | { op: 'resolve4'; name: string }
  | { op: 'raw'; name: string; type?: 'A' | 'AAAA'; proto: 'udp' | 'tcp'; server?: string; port?: number }
  | { op: 'http'; url: string };

export interface ClientResult {
  op: string;
  name?: string;
  addresses?: string[];
  error?: string;
  rcode?: number;
  tc?: boolean;
  aa?: boolean;
  answers?: string[];
  status?: number;
  body?: string;
}

const clientScript = `
const dns = require('node:dns');
const { createSocket } = require('node:dgram');
const { connect } = require('node:net');
const packet = require(${JSON.stringify(dnsPacketPath)});
const resolver = new dns.promises.Resolver({ timeout: 3000, tries: 1 });
function raw({ name, type = 'A', proto, server = ${JSON.stringify(resolverIp)}, port = 53 }) {
  const query = packet.encode({ id: 7, type: 'query', flags: packet.RECURSION_DESIRED, questions: [{ name, type }] });
  return new Promise((resolve, reject) => {
    let socket;
    const timer = setTimeout(() => { socket.close?.(); socket.destroy?.(); reject(new Error('timeout')); }, 5000);
    const done = (message) => { clearTimeout(timer); const decoded = packet.decode(message); resolve({ rcode: decoded.flags & 15, tc: decoded.flag_tc, aa: decoded.flag_aa, answers: decoded.answers.map((a) => a.type + ' ' + a.name + ' ' + a.data) }); };
    if (proto === 'udp') {
      socket = createSocket('udp4');
      socket.on('message', (message) => { socket.close(); done(message); });
      socket.send(query, port, server);
    } else {
      socket = connect(port, server);
      let got = Buffer.alloc(0);
      socket.on('data', (chunk) => { got = Buffer.concat([got, chunk]); if (got.length >= 2 && got.length >= 2 + got.readUInt16BE(0)) { socket.destroy(); done(got.subarray(2)); } });
      socket.on('error', reject);
      const length = Buffer.alloc(2); length.writeUInt16BE(query.length);
      socket.write(Buffer.concat([length, query]));
    }
  });
}
async function run(op) {
  try {
    if (op.op === 'lookup') return { addresses: (await dns.promises.lookup(op.name, { all: true, family: 4 })).map((a) => a.address) };
    if (op.op === 'resolve4') return { addresses: await resolver.resolve4(op.name) };
    if (op.op === 'raw') return await raw(op);
    const response = await fetch(op.url, { signal: AbortSignal.timeout(10000) });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    return { error: error.code || error.message };
  }
}
(async () => {
  const results = [];
  for (const op of JSON.parse(process.argv[1])) results.push({ op: op.op, name: op.name, ...(await run(op)) });
  process.stdout.write(JSON.stringify(results));
})();
`;

/** Runs the ops in order inside the namespace, as the app's uid unless `uid` says otherwise. */
export async function runClient(netns: string, ops: ClientOp[], uid = appUid): Promise<ClientResult[]> {
  const user = uid === 0 ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'];
  const result = await execa('ip', ['netns', 'exec', netns, ...user, nodeBin, '-e', clientScript, JSON.stringify(ops)], { reject: false, timeout: 60_000 });
  if (result.exitCode !== 0) throw new Error(`the DNS client in ${netns} failed (exit ${result.exitCode}): ${result.stderr.slice(0, 500)}`);
  return JSON.parse(result.stdout) as ClientResult[];
}

/** `getent hosts <name>` as the app: glibc's resolver, search list and all. */
export async function getent(netns: string, name: string): Promise<string> {
  const result = await execa('ip', ['netns', 'exec', netns, 'setpriv', `--reuid=${appUid}`, `--regid=${appUid}`, '--clear-groups', 'getent', 'hosts', name], { reject: false, timeout: 20_000 });
  return result.stdout.trim();
}
