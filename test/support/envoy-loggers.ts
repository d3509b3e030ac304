import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

/**
 * The log components an Envoy binary knows, asked of the binary itself: it
 * runs with an admin-only bootstrap and answers `POST /logging` with every
 * active logger. Envoy has no other listing (`--help` names none).
 */
export async function listEnvoyLoggers(envoyBin: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'envoy-loggers-'));
  const addressPath = join(dir, 'admin-address');
  await writeFile(join(dir, 'bootstrap.yaml'), 'admin:\n  address: { socket_address: { address: 127.0.0.1, port_value: 0 } }\n');
  const envoy = execa(envoyBin, ['-c', join(dir, 'bootstrap.yaml'), '--admin-address-path', addressPath, '--disable-hot-restart', '-l', 'error'], {
    reject: false,
    stdin: 'ignore',
  });
  try {
    const address = await waitForFile(addressPath);
    const body = await (await fetch(`http://${address}/logging`, { method: 'POST' })).text();
    return [...body.matchAll(/^\s+([\w.-]+): \w+$/gm)].map((match) => match[1]!).sort();
  } finally {
    envoy.kill('SIGTERM');
    await envoy;
    await rm(dir, { recursive: true, force: true });
  }
}

async function waitForFile(path: string): Promise<string> {
  for (let tries = 0; tries < 300; tries++) {
    const text = (await readFile(path, 'utf8').catch(() => '')).trim();
    if (text) return text;
    await sleep(50);
  }
  throw new Error(`Envoy never wrote ${path}`);
}
