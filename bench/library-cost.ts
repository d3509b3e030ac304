// What a well-kept library would cost beside the hand-written piece it would
// replace (issue 21): each case runs in a fresh node (no bundle), does one
// representative piece of work, then reports its resident and anonymous
// memory and the time the work took, the import included. Ours is the tsc
// output in dist/ (run scripts/build-agent.sh first). Medians of
// --runs (default 5). The "ours" rows do the same work with our module.
// Run: .tools/bin/node bench/library-cost.ts [--runs 5]
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { nodeBin, repoRoot } from '../test/support/paths.ts';

const { values: flags } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(flags.runs);

const report = `
const status = require('node:fs').readFileSync('/proc/self/status', 'utf8');
const kb = (field) => Number(new RegExp('^' + field + ':\\\\s+(\\\\d+)', 'm').exec(status)[1]);
console.log(JSON.stringify({ ms: performance.now() - t0, rssMb: kb('VmRSS') / 1024, anonMb: kb('RssAnon') / 1024 }));`;

const protobufjs = `${repoRoot}/node_modules/@grpc/proto-loader/node_modules/protobufjs/index.js`;
/** The DiscoveryResponse with one Secret the SDS server sends, described to protobufjs the way proto-loader would. */
const secretSchema = JSON.stringify({
  nested: {
    Secret: { fields: { name: { type: 'string', id: 1 }, validationContext: { type: 'Ctx', id: 4 } } },
    Ctx: { fields: { trustedCa: { type: 'Src', id: 1 } } },
    Src: { fields: { inlineBytes: { type: 'bytes', id: 2 } } },
    Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
    DiscoveryResponse: {
      fields: {
        versionInfo: { type: 'string', id: 1 },
        resources: { rule: 'repeated', type: 'Any', id: 2 },
        typeUrl: { type: 'string', id: 4 },
        nonce: { type: 'string', id: 5 },
      },
    },
  },
});

const cases: Record<string, string> = {
  'bare node': `const t0 = performance.now();`,
  'protobuf: protobufjs 7 (encode one SDS response)': `const t0 = performance.now();
const pb = require(${JSON.stringify(protobufjs)});
const root = pb.Root.fromJSON(${secretSchema});
const secret = root.lookupType('Secret').encode({ name: 'ROOTCA', validationContext: { trustedCa: { inlineBytes: Buffer.alloc(1200) } } }).finish();
root.lookupType('DiscoveryResponse').encode({ versionInfo: '1', resources: [{ typeUrl: 't', value: secret }], typeUrl: 't', nonce: 'n' }).finish();`,
  'protobuf: ours (src/sds/secret-proto.ts, compiled)': `const t0 = performance.now();
const { encodeSecretResponse } = await import(${JSON.stringify(`${repoRoot}/dist/sds/secret-proto.js`)});
encodeSecretResponse({ version: '1', nonce: 'n', secrets: [{ name: 'ROOTCA', material: { kind: 'validation-context', trustedCa: Buffer.alloc(1200) } }] });`,
  'CSR/DER/PEM: node-forge 1.4 (RSA 2048 CSR; it has no ECDSA keys)': `const t0 = performance.now();
const forge = require(${JSON.stringify(`${repoRoot}/node_modules/node-forge/lib/index.js`)});
const keys = forge.pki.rsa.generateKeyPair({ bits: 2048, workers: -1 });
const csr = forge.pki.createCertificationRequest();
csr.publicKey = keys.publicKey;
csr.setSubject([{ name: 'organizationName', value: 'cluster.local' }]);
csr.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'subjectAltName', altNames: [{ type: 6, value: 'spiffe://cluster.local/ns/default/sa/app' }] }] }]);
csr.sign(keys.privateKey, forge.md.sha256.create());
forge.pki.certificationRequestToPem(csr);`,
  'CSR/DER/PEM: ours (src/ca/csr.ts compiled, RSA 2048)': `const t0 = performance.now();
const { buildCsr, generateWorkloadKey } = await import(${JSON.stringify(`${repoRoot}/dist/ca/csr.js`)});
buildCsr({ key: await generateWorkloadKey('RSA'), uri: 'spiffe://cluster.local/ns/default/sa/app', organization: 'cluster.local' });`,
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows: Record<string, { ms: number; rssMb: number; anonMb: number }> = {};
for (const [name, body] of Object.entries(cases)) {
  const samples = Array.from(
    { length: runs },
    () =>
      JSON.parse(
        execFileSync(
          nodeBin,
          ['--input-type=module', '-e', `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);\n${body}\n${report}`],
          { encoding: 'utf8' },
        ),
      ) as { ms: number; rssMb: number; anonMb: number },
  );
  rows[name] = { ms: median(samples.map((s) => s.ms)), rssMb: median(samples.map((s) => s.rssMb)), anonMb: median(samples.map((s) => s.anonMb)) };
}
const bare = rows['bare node']!;
console.log(JSON.stringify(Object.fromEntries(Object.entries(rows).map(([name, row]) => [name, {
  ms: Number(row.ms.toFixed(1)), rssOverBareMb: Number((row.rssMb - bare.rssMb).toFixed(1)), anonOverBareMb: Number((row.anonMb - bare.anonMb).toFixed(1)),
}])), null, 2));
