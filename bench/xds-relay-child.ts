// The relay alone in its own process, as in the agent, for bench/xds-relay.ts.
// argv: <socket path> <upstream port> [upstream host, default 127.0.0.1] [keep|nokeep|wasm: last-known-good on (default) or off; wasm: on, with Wasm remote load conversion as the agent runs it by default]
import { Registry } from '../src/metrics/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import { silentLogger } from '../src/shared/log.ts';
import { XdsRelay } from '../src/xds/relay/relay.ts';
import { readEnvSettings } from '../src/settings/env-settings.ts';
import { wasmEnv } from '../src/settings/wasm-env.ts';
import { startWasmLoader } from '../src/wasm/start.ts';

const [socketPath, port, host = '127.0.0.1', keep = 'keep'] = process.argv.slice(2);
const wasm =
  keep === 'wasm'
    ? startWasmLoader(readEnvSettings({ WASM_CACHE_DIR: `${socketPath}.wasm-cache` }, wasmEnv), { clock: systemClock, logger: silentLogger })
    : undefined;
const relay = new XdsRelay({
  socketPath: socketPath!,
  upstream: { address: { host, port: Number(port) }, policy: 'NONE', certDir: '/nonexistent' },
  registry: new Registry(),
  clock: systemClock,
  logger: silentLogger,
  keepLastKnownGood: keep !== 'nokeep',
  ecds: wasm?.convert,
});
await relay.start();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void relay.stop().then(() => process.exit(0)));
