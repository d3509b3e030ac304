/**
 * What a CA call per rotation leaves in the agent's native memory (issue 44):
 * `--calls` CreateCertificate calls back to back through `src/ca/ca-client.ts`
 * (a channel of its own per call, as the agent makes them) against a local
 * TLS server of node:http2 that answers UNIMPLEMENTED, in a child started with
 * the shebang's memory flags and V8's memory saver. Variants: `kept` (the TLS
 * credentials the client keeps per trust config), `per-call` (new credentials
 * each call: the client before it kept them), `keys` (an RSA 2048 workload
 * key and its CSR per turn, no call; slow: only with `--keys`). Prints the child's main malloc arena
 * (the brk `[heap]`) and its whole anonymous memory, from /proc/self/smaps,
 * every fifth of the way; variants alternate, `--runs` times.
 *
 * Run: .tools/bin/node bench/ca-call-memory.ts [--calls 1500] [--runs 2] [--keys]
 */
import { readFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { execa } from 'execa';
import { caCredentials, createCertificate } from '../src/ca/ca-client.ts';
import { buildCsr, generateWorkloadKey } from '../src/ca/csr.ts';
import { nodeBin, repoRoot } from '../test/support/paths.ts';
import { pems } from '../test/support/self-signed.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '1500' }, runs: { type: 'string', default: '2' }, keys: { type: 'boolean', default: false }, child: { type: 'string' },
  },
});
const calls = Number(values.calls);
const variants = ['kept', 'per-call', 'keys'] as const;
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

async function turn(variant: Variant, address: string): Promise<void> {
  if (variant === 'keys') {
    buildCsr({ key: await generateWorkloadKey('RSA'), uri: 'spiffe://cluster.local/ns/default/sa/bench' });
    return;
  }
  const tls = { roots: pems.a.cert, serverName: 'a' };
  const credentials = variant === 'per-call' ? caCredentials() : undefined;
  const request = { csr: 'CSR', validitySeconds: 60 };
  const result = await createCertificate({ endpoint: { address, tls }, request, token: 'token', timeoutMs: 10_000, credentials });
  if (result.ok || result.code !== 'UNIMPLEMENTED') throw new Error(`unexpected answer: ${JSON.stringify(result)}`);
}

async function child(variant: Variant): Promise<void> {
  setFlagsFromString('--memory-saver-mode'); // as the agent at its first LIVE
  const server = createSecureServer({ key: pems.a.key, cert: pems.a.cert });
  server.on('stream', (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const row: string[] = [];
  for (let done = 0; done <= calls; done++) {
    if (done % Math.ceil(calls / 5) === 0 || done === calls) row.push(`${done}: ${anonymous()}`);
    if (done < calls) await turn(variant, address);
  }
  console.log(row.join('  '));
  process.exit(0);
}

if (values.child) await child(values.child as Variant);
else {
  console.log(`${calls} turns back to back; turns: brk heap MB / anonymous MB`);
  for (let run = 0; run < Number(values.runs); run++) {
    for (const variant of variants.filter((name) => name !== 'keys' || values.keys)) {
      const args = [...shebangFlags, fileURLToPath(import.meta.url), '--child', variant, '--calls', String(calls)];
      const { stdout } = await execa(nodeBin, args, { cwd: repoRoot, env: { MALLOC_ARENA_MAX: '2' } });
      console.log(`${variant} | ${stdout}`);
    }
  }
}
