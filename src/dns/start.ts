import { join } from 'node:path';
import { Counter, type Registry } from '../metrics/index.ts';
import type { Clock } from '../shared/clock.ts';
import { badEnv } from '../shared/errors.ts';
import type { HostPort } from '../shared/host-port.ts';
import type { Logger } from '../shared/log.ts';
import type { NameTableSink } from '../discovery/consumers.ts';
import { Forwarder } from './forwarder.ts';
import { LastKnownGoodTable } from './last-known-good-table.ts';
import { registerDnsMetrics } from './metrics.ts';
import { istioResolvConf, readResolvConf, type ResolvConf } from './resolv-conf.ts';
import { DnsServer } from './server.ts';
import { TableStore, type TableDebug } from './table-store.ts';

export interface StartDnsOptions {
  address: HostPort;
  forwardTimeoutMs: number;
  forwardParallel: boolean;
  /** POD_NAMESPACE and the proxy's DNS domain, for Kubernetes short names. */
  pod: { namespace: string; domain: string };
  /** --configPath: the last table is kept there. */
  configPath: string;
  /** The proxy's node id: a last-known-good table is used by the same node only. */
  node: string;
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /** Tests: where resolv.conf is read (Istio's order otherwise). */
  resolvConfPaths?: readonly string[];
}

/** Disposing it stops it: a recipe's stack takes it as it is. */
export interface DnsRuntime extends AsyncDisposable {
  /** Where the relay hands the name tables (NDS). */
  nameTables: NameTableSink;
  /** Why DNS keeps readiness at 503: no table yet. */
  problem(): string | undefined;
  /** /debug/ndsz. */
  debug(withTable: boolean): TableDebug;
  stop(): Promise<void>;
}

/** Starts the DNS proxy: the last-known-good table first, then UDP and TCP listeners; NDS tables arrive through `nameTables`. */
export async function startDns(options: StartDnsOptions): Promise<DnsRuntime> {
  const { clock, logger } = options;
  const ownsPort53 = options.address.port === 53 && process.getuid?.() === 0;
  const resolv = readResolvConf(options.resolvConfPaths ?? (ownsPort53 ? [istioResolvConf, '/etc/resolv.conf'] : ['/etc/resolv.conf']));
  if (resolv.unreadable) logger.warn({ resolvConf: resolv.path, reason: resolv.unreadable }, 'resolv.conf not read: unknown names are SERVFAIL');
  logger.info({ resolvConf: resolv.path, servers: resolv.servers, search: resolv.search }, 'DNS forwards unknown names to these resolvers');
  const store = new TableStore({ pod: { ...options.pod, search: resolv.search }, now: () => clock.now() });
  const lastKnownGood = new LastKnownGoodTable({ path: join(options.configPath, 'dns-name-table.json'), node: options.node, now: () => clock.now() });
  await using stack = new AsyncDisposableStack();
  // Undone last: a table being written as the server stops is on disk before the stop resolves.
  stack.defer(() => lastKnownGood.close());
  await loadLastKnownGood(store, lastKnownGood, logger);
  const forwarder = new Forwarder({ servers: resolv.servers, timeoutMs: options.forwardTimeoutMs, parallel: options.forwardParallel, clock });
  // Serving port 53 as root means no capture (a VM, Docker): answer at once, as Istio does, forwarding until the table comes.
  const metrics = { metrics: registerDnsMetrics(options.registry), refused: registerRefusals(options.registry) };
  const hosts = listenHosts(options.address.host, resolv);
  const server = new DnsServer({
    hosts,
    port: options.address.port,
    table: () => store.table,
    forwarder,
    forwardBeforeTable: ownsPort53,
    ...metrics,
    clock,
    logger,
  });
  await server.start().catch((error: Error) => {
    throw badEnv('DNS_PROXY_ADDR', `cannot listen on ${options.address.host}:${options.address.port} (${error.message})`, error);
  });
  stack.defer(() => server.stop());
  const stops = stack.move();
  return {
    nameTables: { accept: (table, version) => acceptTable({ store, lastKnownGood, table, version, logger }) },
    problem: () => (store.table ? undefined : 'DNS is on and the name table has not arrived yet (NDS)'),
    debug: (withTable) => store.debug(withTable),
    stop: () => stops.disposeAsync(),
    [Symbol.asyncDispose]: () => stops.disposeAsync(),
  };
}

async function loadLastKnownGood(store: TableStore, lastKnownGood: LastKnownGoodTable, logger: Logger): Promise<void> {
  const found = await lastKnownGood.read();
  if (!found.ok) return void logger.info({ file: lastKnownGood.path, reason: found.reason }, 'no kept name table used');
  try {
    await store.load(found.table, found.version, 'kept');
    logger.info({ file: lastKnownGood.path, version: found.version }, 'DNS answers from the kept name table until the discovery server sends one');
  } catch (error) {
    logger.warn({ file: lastKnownGood.path, err: error }, 'the kept name table does not parse; ignored');
  }
}

async function acceptTable(input: {
  store: TableStore;
  lastKnownGood: LastKnownGoodTable;
  table: Buffer;
  version: string;
  logger: Logger;
}): Promise<string | undefined> {
  const { store, lastKnownGood, table, version, logger } = input;
  try {
    await store.load(table, version, 'nds');
  } catch (error) {
    return `NameTable does not parse: ${(error as Error).message}`;
  }
  const loaded = store.debug(false);
  logger.info({ version, entries: loaded.entries, names: loaded.names }, 'DNS name table loaded');
  lastKnownGood.write(version, table).catch((error: Error) => logger.warn({ file: lastKnownGood.path, err: error }, 'cannot keep the name table on disk'));
  return undefined;
}

/** `localhost` is 127.0.0.1, plus ::1 when resolv.conf has IPv6 resolvers (clients then ask over IPv6 too), as Istio binds. */
function listenHosts(host: string, resolv: ResolvConf): string[] {
  if (host !== 'localhost') return [host];
  return resolv.servers.some((server) => server.includes(':')) ? ['127.0.0.1', '::1'] : ['127.0.0.1'];
}

/** Not one of Istio's: what hostile or broken clients cost, by reason (formerr, notimp, fault, send). */
function registerRefusals(registry: Registry): Counter<'reason'> {
  return new Counter({
    name: 'istio_agent_dns_refused_total',
    help: 'DNS queries refused (FORMERR, NOTIMP) or dropped (a fault, a failed send), by reason.',
    labelNames: ['reason'],
    registers: [registry],
  });
}
