/**
 * `pilot-agent inject` and `pilot-agent istio-iptables --dry-run` as the real
 * binary (bin/pilot-agent.js), with real files in a temp dir: exit codes and
 * the one-line errors come from runCli itself.
 */
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { agentBin, nodeBin } from '../support/paths.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `pilot-agent <argv>` as a process with an empty environment; output as written (final newlines kept). */
async function run(argv: string[], stdin = ''): Promise<Run> {
  assertBundleFresh();
  const result = await execa(nodeBin, [agentBin, ...argv], {
    input: stdin,
    env: {},
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    timeout: 30_000,
  });
  return { code: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, ports: [{containerPort: 8080}]}]
`;
const service = 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n';

describe('pilot-agent inject', () => {
  const cleanup = suiteCleanup();
  let dir = '';
  before(async () => {
    dir = await tempDir(cleanup, 'pa-inject-');
  });

  describe('a file injected into -o with the given values', () => {
    let result: Run;
    let injected: any;
    let passed: unknown;
    before(async () => {
      await writeFile(join(dir, 'app.yaml'), `${deployment}---\n${service}`);
      await writeFile(join(dir, 'values.yaml'), 'discoveryAddress: istiod.istio-system.svc:15010\nholdApplicationUntilProxyStarts: true\n');
      result = await run(['inject', '-f', join(dir, 'app.yaml'), '--values', join(dir, 'values.yaml'), '-o', join(dir, 'out.yaml')]);
      [injected, passed] = parseAllDocuments(await readFile(join(dir, 'out.yaml'), 'utf8')).map((doc) => doc.toJS());
    });

    it('injects the file into -o with the given values', async () => {
      assert.deepEqual(result, { code: 0, stdout: '', stderr: '' });
      // holdApplicationUntilProxyStarts on the default target (Kubernetes 1.29): a native sidecar.
      const proxy = injected.spec.template.spec.initContainers[1];
      assert.equal(proxy.name, 'istio-proxy');
      assert.equal(proxy.restartPolicy, 'Always');
      assert.ok(proxy.args.includes('istiod.istio-system.svc:15010'));
      assert.deepEqual(passed, parseAllDocuments(service)[0]?.toJS());
      assert.deepEqual((await readdir(dir)).sort(), ['app.yaml', 'out.yaml', 'values.yaml'], 'no temp file left');
    });

    it('writes a Deployment that passes the Kubernetes schema', () => {
      new Deployment(injected).validate();
    });
  });

  describe('inject reading a manifest from stdin with -f -', () => {
    let once: Run;
    before(async () => {
      once = await run(['inject', '-f', '-'], deployment);
    });

    it('reads stdin and writes the injected manifest to stdout', () => {
      assert.equal(once.code, 0);
      assert.match(once.stdout, /name: istio-init/);
    });

    it('a second pass over its own output changes nothing', async () => {
      const twice = await run(['inject', '-f', '-'], once.stdout);
      assert.equal(twice.stdout, once.stdout);
    });
  });

  it('fails with code 2 and one line naming the document, and writes nothing', async () => {
    const bad = `${service}---\n${deployment.replace('containerPort: 8080', 'containerPort: 80800')}`;
    await writeFile(join(dir, 'bad.yaml'), bad);
    await writeFile(join(dir, 'keep.yaml'), 'previous output\n');
    const result = await run(['inject', '-f', join(dir, 'bad.yaml'), '-o', join(dir, 'keep.yaml')]);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^pilot-agent: .*bad\.yaml: document 2 \(Deployment\/web\): spec\.template\.spec\.containers\[0\]\.ports\[0\]\.containerPort: port "80800" is not an integer from 1 to 65535\n$/,
    );
    assert.equal(await readFile(join(dir, 'keep.yaml'), 'utf8'), 'previous output\n');
  });

  it('fails with code 2 on a manifest that is not YAML, or values with a typo', async () => {
    assert.match((await run(['inject', '-f', '-'], 'kind: Pod\nspec: {containers: [\n')).stderr, /^pilot-agent: stdin: document 1: not valid YAML: /);
    await writeFile(join(dir, 'typo.yaml'), 'imagePullPolicyy: Always\n');
    const typo = await run(['inject', '-f', '-', '--values', join(dir, 'typo.yaml')], deployment);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /typo\.yaml: imagePullPolicyy: unknown key\n$/);
    assert.match((await run(['inject', '-f', join(dir, 'missing.yaml')])).stderr, /missing\.yaml: cannot read: ENOENT\n$/);
  });
});

describe('pilot-agent istio-iptables --dry-run', () => {
  it("prints the iptables-restore input for the injector's flags", async () => {
    const result = await run([
      'istio-iptables',
      '-p',
      '15001',
      '-z',
      '15006',
      '-u',
      '1337',
      '-m',
      'REDIRECT',
      '-i',
      '*',
      '-x',
      '',
      '-b',
      '8080',
      '-d',
      '15090,15021,15020',
      '--dry-run',
    ]);
    assert.equal(result.code, 0);
    // One block per family; an IPv6 block follows when the host has an IPv6 address.
    assert.match(result.stdout, /^# iptables-restore --noflush\n\*nat\n:ISTIO_INBOUND - \[0:0\]\n/);
    assert.match(result.stdout, /\n-A ISTIO_INBOUND -p tcp --dport 8080 -j ISTIO_IN_REDIRECT\n/);
    assert.match(result.stdout, /\nCOMMIT\n(# ip6tables-restore --noflush\n|$)/);
  });

  it('rejects a port both in -b and -d, and a port out of range, with code 2', async () => {
    const conflict = await run(['istio-iptables', '-b', '8080,9090', '-d', '9090', '--dry-run']);
    assert.deepEqual([conflict.code, conflict.stderr], [2, 'pilot-agent: -d: port 9090 is also in the captured inbound ports (-b)\n']);
    const range = await run(['istio-iptables', '-p', '99999', '--dry-run']);
    assert.deepEqual([range.code, range.stdout], [2, '']);
    assert.match(range.stderr, /-p: port "99999" is not an integer from 1 to 65535/);
  });
});
