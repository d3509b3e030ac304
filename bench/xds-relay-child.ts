// The relay alone in its own process, as in the agent, for bench/xds-relay.ts.
// argv: <socket path> <upstream port> [upstream host, default 127.0.0.1] [keep|nokeep: last-known-good on (default) or off]
import { Registry } from '../src/metrics/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import { silentLogger } from '../src/shared/log.ts';
import { XdsRelay } from '../src/xds/relay.ts';

const [socketPath, port, host = '127.0.0.1', keep = 'keep'] = process.argv.slice(2);
const relay = new XdsRelay({
  socketPath: socketPath!,
  upstream: { address: { host, port: Number(port) }, policy: 'NONE', certDir: '/nonexistent' },
  registry: new Registry(),
  clock: systemClock,
  logger: silentLogger,
  keepLastKnownGood: keep !== 'nokeep',
});
await relay.start();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void relay.stop().then(() => process.exit(0)));
