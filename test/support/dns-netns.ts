/**
 * What the DNS e2e tests run around a pod's network namespace: the cluster's
 * DNS in a namespace of its own, reached by a route as kube-dns' ClusterIP
 * is; the capture istio-init applies, from the injection template; and an
 * app-side client. Both ends use dns-packet and Node's resolvers
 * (getaddrinfo and c-ares), so no dig is needed.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { parseAllDocuments } from 'yaml';
import { assertBundleFresh } from './bundle-fresh.ts';
import { LineLog } from './lines.ts';
import { agentBin, nodeBin, repoRoot } from './paths.ts';
import { own } from './processes.ts';

const dnsPacketPath = join(repoRoot, 'node_modules', 'dns-packet', 'index.js');
/** The cluster DNS' service address, as kube-dns' ClusterIP would be: off the pod, reached by a route. */
export const clusterDnsIp = '198.18.0.10';
/** The /30 between the pod and the cluster DNS' namespace; only ever inside these two namespaces. */
const link = { pod: '198.19.0.1', dns: '198.19.0.2' };
/** The uid the app's clients run as. */
export const appUid = 65534;
/** The proxy's uid, as the injection template runs the agent (and istio-init excludes it). */
export const proxyUid = 1337;

/** Answers `external.test` (one A) and `big.test` (100 A: truncated over UDP), NXDOMAIN else; logs each query and its source. */
const resolverScript = `
const { createSocket } = require('node:dgram');
const { createServer } = require('node:net');
const packet = require(${JSON.stringify(dnsPacketPath)});
const address = process.argv[1];
function answer(message, proto, from) {
  const query = packet.decode(message);
  const question = query.questions[0];
  console.log(JSON.stringify({ event: 'query', proto, name: question.name, type: question.type, from }));
  const ips = question.type !== 'A' ? [] : question.name === 'external.test' ? ['198.19.100.7'] : question.name === 'big.test' ? Array.from({ length: 100 }, (_, i) => '198.19.100.' + (i + 1)) : undefined;
  const reply = (answers, flags) => packet.encode({ id: query.id, type: 'response', flags: flags | packet.RECURSION_AVAILABLE, questions: query.questions, answers });
  if (!ips) return reply([], 3);
  const answers = ips.map((ip) => ({ type: 'A', name: question.name, ttl: 60, data: ip }));
  const full = reply(answers, 0);
  return proto === 'udp' && full.length > 512 ? reply([], packet.TRUNCATED_RESPONSE) : full;
}
const udp = createSocket('udp4');
udp.on('message', (message, from) => udp.send(answer(message, 'udp', from.address), from.port, from.address));
const tcp = createServer((socket) => {
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
      const response = answer(buffered.subarray(2, 2 + buffered.readUInt16BE(0)), 'tcp', socket.remoteAddress);
      buffered = buffered.subarray(2 + buffered.readUInt16BE(0));
      const length = Buffer.alloc(2);
      length.writeUInt16BE(response.length);
      socket.write(Buffer.concat([length, response]));
    }
  });
  socket.on('error', () => {});
});
udp.bind(53, address, () => tcp.listen(53, address, () => console.log(JSON.stringify({ event: 'ready' }))));
`;

export interface ResolverLogEntry {
  event: string;
  proto?: string;
  name?: string;
  from?: string;
}

export interface Resolver {
  /** The address it answers on. */
  ip: string;
  log: LineLog<ResolverLogEntry>;
  stop(): Promise<void>;
}

/** Starts the test resolver inside `netns`, on `address` port 53 (UDP and TCP). */
export async function startResolver(netns: string, address: string): Promise<Resolver> {
  const child: ResultPromise = execa('ip', ['netns', 'exec', netns, nodeBin, '-e', resolverScript, address], {
    reject: false,
    buffer: false,
    stdin: 'ignore',
    stderr: 'inherit',
  });
  own(child, child, `DNS resolver in ${netns}`);
  const log = new LineLog<ResolverLogEntry>(child.stdout!);
  const stop = async () => {
    child.kill('SIGTERM');
    await child;
  };
  await log.waitFor((entry) => entry.event === 'ready', 10_000, 'the test resolver to listen').catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { ip: address, log, stop };
}

const ip = (...args: string[]) => execa('ip', args, { timeout: 10_000 });
/** Cluster DNS namespaces this process has made: each gets its own name. */
let clusterDnsMade = 0;

/**
 * The cluster's DNS for the pod in `podNetns`: its own namespace, joined to
 * the pod's by a veth pair, the resolver on a /32 of that namespace's
 * loopback and the pod routing to it over the pair, as a pod reaches kube-dns'
 * ClusterIP through its eth0. Nothing is added to the root namespace. stop()
 * ends the resolver and removes the namespace (and so both ends of the pair).
 */
export async function startClusterDns(podNetns: string): Promise<Resolver & { netns: string }> {
  const name = `pa-kdns-${process.pid}-${clusterDnsMade++}`;
  const remove = async () => void (await execa('ip', ['netns', 'del', name], { reject: false, timeout: 10_000 }));
  try {
    await ip('netns', 'add', name);
    await ip('-n', podNetns, 'link', 'add', 'kdns0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
    await ip('-n', podNetns, 'addr', 'add', `${link.pod}/30`, 'dev', 'kdns0');
    await ip('-n', podNetns, 'link', 'set', 'kdns0', 'up');
    await ip('-n', name, 'addr', 'add', `${link.dns}/30`, 'dev', 'eth0');
    await ip('-n', name, 'link', 'set', 'eth0', 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    await ip('-n', name, 'addr', 'add', `${clusterDnsIp}/32`, 'dev', 'lo');
    await ip('-n', podNetns, 'route', 'add', `${clusterDnsIp}/32`, 'via', link.dns);
    const resolver = await startResolver(name, clusterDnsIp);
    return { ...resolver, netns: name, stop: async () => (await resolver.stop(), await remove()) };
  } catch (error) {
    await remove();
    throw error;
  }
}

/** /etc/netns/<name>/resolv.conf, which `ip netns exec` mounts over /etc/resolv.conf; removed by the returned function. */
export async function writeNetnsResolvConf(netns: string, nameserver = clusterDnsIp): Promise<() => Promise<void>> {
  const dir = join('/etc/netns', netns);
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'resolv.conf'),
    `nameserver ${nameserver}\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:2 attempts:1\n`,
  );
  return () => rm(dir, { recursive: true, force: true });
}

/** istio-init's container as `pilot-agent inject` renders it for a pod with `proxyMetadata: {DNS_CAPTURE: "true"}`. */
export async function istioInitForDnsCapture(): Promise<{ args: string[]; env: Record<string, string> }> {
  assertBundleFresh();
  const pod = 'apiVersion: v1\nkind: Pod\nmetadata: {name: app, namespace: default}\nspec:\n  containers: [{name: app, image: example/app:1}]\n';
  const dir = await mkdtemp(join(tmpdir(), 'pa-dns-init-'));
  try {
    await writeFile(join(dir, 'values.yaml'), 'proxyMetadata: {DNS_CAPTURE: "true"}\n');
    const result = await execa(nodeBin, [agentBin, 'inject', '-f', '-', '--values', join(dir, 'values.yaml')], {
      input: pod,
      env: {},
      extendEnv: false,
      timeout: 30_000,
    });
    const spec = (
      parseAllDocuments(result.stdout)[0]!.toJS() as { spec: { initContainers: { name: string; args: string[]; env?: { name: string; value: string }[] }[] } }
    ).spec;
    const init = spec.initContainers.find((container) => container.name === 'istio-init');
    if (!init) throw new Error(`pilot-agent inject rendered no istio-init: ${result.stdout.slice(0, 500)}`);
    return { args: init.args, env: Object.fromEntries((init.env ?? []).map((entry) => [entry.name, entry.value])) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Runs istio-init in `netns` as the template has it (this agent's
 * `istio-iptables` with the template's args and env): the rules every later
 * test packet goes through. Reads the namespace's resolv.conf, so write that first.
 */
export async function runIstioInit(netns: string): Promise<{ args: string[]; env: Record<string, string> }> {
  const init = await istioInitForDnsCapture();
  await execa('ip', ['netns', 'exec', netns, nodeBin, agentBin, ...init.args], {
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...init.env },
    extendEnv: false,
    timeout: 30_000,
  });
  return init;
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
function raw({ name, type = 'A', proto, server = ${JSON.stringify(clusterDnsIp)}, port = 53 }) {
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
  const result = await execa('ip', ['netns', 'exec', netns, 'setpriv', `--reuid=${appUid}`, `--regid=${appUid}`, '--clear-groups', 'getent', 'hosts', name], {
    reject: false,
    timeout: 20_000,
  });
  return result.stdout.trim();
}
