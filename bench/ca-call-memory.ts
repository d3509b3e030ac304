/**
 * What a CA call per rotation leaves in the agent's native memory (issue 44):
 * `--calls` CreateCertificate calls back to back through `src/ca/ca-client.ts`
 * against a local TLS server of node:http2 that answers an empty chain, in a
 * child started with the shebang's memory flags and V8's memory saver.
 * Variants: `channel` (one channel kept from call to call, as the agent
 * makes them), `kept` (a channel per call, the TLS credentials kept per trust
 * config: the agent before 7166705), `per-call` (new credentials each call:
 * the client before it kept them), `keys` (an RSA 2048 workload
 * key and its CSR per turn, no call; slow: only with `--keys`), `rotation` (a
 * rotation's whole native path, no call: RSA key, CSR, a leaf for it from an
 * in-process CA, the chain check, the exported key; only with `--rotations`),
 * `rotation-gc` (the same and a full GC every tenth turn: once a minute at the
 * soak's one rotation per 6 s). `--baseline DIR` (a copy of main with this
 * file and test/support/cert-builder.ts laid over it) runs `rotation` there
 * and `rotation-gc` there too, as `main …`, in the same run. Prints the child's main malloc arena
 * (the brk `[heap]`) and its whole anonymous memory, from /proc/self/smaps,
 * every fifth of the way; variants alternate, `--runs` times.
 *
 * Run: .tools/bin/node bench/ca-call-memory.ts [--calls 1500] [--runs 2] [--keys] [--rotations [--baseline DIR]]
 */
import { readFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { execa } from 'execa';
import { caChannel, caCredentials, createCertificate } from '../src/ca/ca-client.ts';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { buildCsr, generateWorkloadKey } from '../src/ca/csr.ts';
import { frame } from '../src/grpc/grpc-frame.ts';
import { GrpcServerCall } from '../src/grpc/server-call.ts';
import { checkIssued } from '../src/ca/workload-certificates.ts';
import { buildCert, ecKey } from '../test/support/cert-builder.ts';
import { nodeBin, repoRoot } from '../test/support/paths.ts';
import { pems } from '../test/support/self-signed.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '1500' }, runs: { type: 'string', default: '2' }, keys: { type: 'boolean', default: false }, child: { type: 'string' },
    rotations: { type: 'boolean', default: false }, baseline: { type: 'string' },
  },
});
const calls = Number(values.calls);
const variants = ['channel', 'kept', 'per-call', 'keys', 'rotation', 'rotation-gc'] as const;
type Variant = (typeof variants)[number];
/** The shebang's memory flags (bin/pilot-agent.js). */
const shebangFlags = ['--max-semi-space-size=1', '--v8-pool-size=1', '--no-concurrent-recompilation'];

/** The brk heap's and all anonymous memory, in MB. */
function anonymous(): string {
  let heap = 0;
  let anon = 0;
  let mapping = '';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) mapping = line;
    else if (line.startsWith('Anonymous:')) {
      const kb = Number(line.split(/\s+/)[1]);
      anon += kb;
      if (mapping.endsWith('[heap]')) heap += kb;
    }
  }
  return `${(heap / 1024).toFixed(1)}/${(anon / 1024).toFixed(1)}`;
}

const identity = 'spiffe://cluster.local/ns/default/sa/bench';
const day = 86_400_000;
const caRoot = buildCert({ subject: 'bench-root', key: ecKey(), notBefore: Date.now() - day, notAfter: Date.now() + day, ca: true });
let fullGc: (() => void) | undefined;
/** CPU of the forced GCs, ms (their whole cost: nothing else runs meanwhile). */
let gcMs = 0;

/** One rotation: the same calls on main's KeyObject and on this tree's WorkloadKey. */
async function rotation(): Promise<void> {
  const key: unknown = await generateWorkloadKey('RSA');
  buildCsr({ key, uri: identity } as Parameters<typeof buildCsr>[0]);
  const spki = Buffer.isBuffer((key as { spki?: Buffer }).spki) ? (key as { spki: Buffer }).spki : createPublicKey(key as KeyObject).export({ type: 'spki', format: 'der' });
  const leaf = buildCert({ subject: '', key: caRoot.key, spki, issuer: caRoot, notBefore: Date.now() - day, notAfter: Date.now() + day, uri: identity });
  const input = { chain: [leaf.pem, caRoot.pem], key, identity, now: Date.now(), trustedRoots: caRoot.pem, pkcs8Key: false };
  const checked = checkIssued(input as Parameters<typeof checkIssued>[0]);
  if (typeof checked === 'string' || !checked.key.startsWith('-----BEGIN RSA PRIVATE KEY-----')) throw new Error(`refused: ${String(checked)}`);
}

/** The agent's channel to the CA, kept from call to call (the `channel` variant). */
const keptChannel = caChannel();

async function turn(variant: Variant, address: string, done: number): Promise<void> {
  if (variant === 'rotation' || variant === 'rotation-gc') {
    await rotation();
    if (variant === 'rotation-gc' && done % 10 === 9) {
      const start = process.cpuUsage();
      fullGc!();
      const used = process.cpuUsage(start);
      gcMs += (used.user + used.system) / 1000;
    }
    return;
  }
  if (variant === 'keys') {
    buildCsr({ key: await generateWorkloadKey('RSA'), uri: 'spiffe://cluster.local/ns/default/sa/bench' });
    return;
  }
  const tls = { roots: pems.a.cert, serverName: 'a' };
  const credentials = variant === 'per-call' ? caCredentials() : undefined;
  const channel = variant === 'channel' ? keptChannel : undefined;
  const request = { csr: 'CSR', validitySeconds: 60 };
  const result = await createCertificate({ endpoint: { address, tls }, request, token: 'token', timeoutMs: 10_000, credentials, channel });
  if (!result.ok) throw new Error(`unexpected answer: ${JSON.stringify(result)}`);
}

async function child(variant: Variant): Promise<void> {
  setFlagsFromString('--memory-saver-mode'); // as the agent at its first LIVE
  if (variant === 'rotation-gc') {
    setFlagsFromString('--expose-gc');
    fullGc = runInNewContext('gc') as () => void;
  }
  const server = createSecureServer({ key: pems.a.key, cert: pems.a.cert });
  server.on('stream', (stream) => {
    // An empty answer (an empty chain): a call that works keeps the kept channel.
    new GrpcServerCall(stream).respond();
    stream.end(frame(Buffer.alloc(0)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const row: string[] = [];
  for (let done = 0; done <= calls; done++) {
    if (done % Math.ceil(calls / 5) === 0 || done === calls) row.push(`${done}: ${anonymous()}`);
    if (done < calls) await turn(variant, address, done);
  }
  const cpu = process.cpuUsage();
  const gc = variant === 'rotation-gc' ? `  gc ${(gcMs / Math.floor(calls / 10)).toFixed(1)} ms CPU each` : '';
  console.log(`${row.join('  ')}  (CPU ${((cpu.user + cpu.system) / 1000 / calls).toFixed(1)} ms/turn${gc})`);
  process.exit(0);
}

/** [label, variant, tree] per child of a run. */
function plan(): [string, Variant, string][] {
  if (values.rotations) {
    const main = values.baseline;
    const base: [string, Variant, string][] = main ? [['main rotation', 'rotation', main], ['main rotation-gc', 'rotation-gc', main]] : [];
    return [...base, ['rotation', 'rotation', repoRoot], ['rotation-gc', 'rotation-gc', repoRoot]];
  }
  return variants.filter((name) => !name.startsWith('rotation') && (name !== 'keys' || values.keys)).map((name) => [name, name, repoRoot]);
}

if (values.child) await child(values.child as Variant);
else {
  console.log(`${calls} turns back to back; turns: brk heap MB / anonymous MB`);
  for (let run = 0; run < Number(values.runs); run++) {
    for (const [label, variant, root] of plan()) {
      const args = [...shebangFlags, join(root, 'bench/ca-call-memory.ts'), '--child', variant, '--calls', String(calls)];
      const { stdout } = await execa(nodeBin, args, { cwd: root, env: { MALLOC_ARENA_MAX: '2' } });
      console.log(`${label} | ${stdout}`);
    }
  }
}
