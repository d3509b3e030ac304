/**
 * A timer past 2^31-1 ms runs after 1 ms in Node. With a mounted
 * certificate valid for a year and the discovery server unreachable, the
 * restart gate waits for "10 minutes before expiry": 365 days away. Unbounded,
 * that wait re-armed itself every millisecond (about 9 % of a core). The
 * same agent with a two-day certificate, run beside it, is the baseline.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { freePort } from '../support/ports.ts';

/** A self-signed certificate (also the root) valid for `days`, written as the sidecar's three files. */
async function mountedCerts(dir: string, days: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  await execa('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert-chain.pem'),
    '-days',
    String(days),
    '-subj',
    '/CN=localhost',
  ]);
  await execa('cp', [join(dir, 'cert-chain.pem'), join(dir, 'root-cert.pem')]);
}

/** User + system CPU time of a process, in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

it('a year-long mounted certificate with the discovery server unreachable does not make the agent spin', { timeout: 120_000 }, async () => {
  await using cleanup = new AsyncDisposableStack();
  const unreachable = `127.0.0.1:${await freePort()}`;
  const agents: Record<'year' | 'days', RunningAgent> = {} as never;
  for (const [name, days] of [['year', 365], ['days', 2]] as const) {
    const dir = await tempDir(cleanup, `pilot-agent-long-cert-${name}-`);
    await mountedCerts(join(dir, 'certs'), days);
    const agent = await startAgent({ discoveryAddress: unreachable, dir, args: ['--certDir', join(dir, 'certs')] });
    deferStop(cleanup, agent);
    agents[name] = agent;
  }
  for (const agent of Object.values(agents)) await agent.log.waitFor((entry) => entry.msg === 'envoy started', 30_000, 'Envoy started');
  // The first dials fail (the gate closes and arms its wait for expiry); let the start's own work settle.
  await sleep(5000);
  const before = { year: cpuMs(agents.year.pid), days: cpuMs(agents.days.pid) };
  await sleep(5000);
  const used = { year: cpuMs(agents.year.pid) - before.year, days: cpuMs(agents.days.pid) - before.days };
  // 9 % of a core over 5 s is 450 ms; the baseline agent uses a few tens.
  assert.ok(used.year <= used.days + 150, `CPU over 5 s: year-long certificate ${used.year} ms, two-day certificate ${used.days} ms`);
});
