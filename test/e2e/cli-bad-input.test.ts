import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { envoyComponents } from '../../src/settings/envoy-components.ts';
import { listEnvoyLoggers } from '../support/envoy-loggers.ts';
import { assertGone, startAgent } from '../support/agent.ts';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { freePort } from '../support/ports.ts';

/** Runs `pilot-agent proxy …` to completion; bad input must end it on its own. */
function runAgent(args: string[], env: Record<string, string> = {}) {
  return execa(nodeBin, [agentBin, 'proxy', ...args], { reject: false, timeout: 30_000, env: { ...env }, extendEnv: false });
}

describe('bad input ends with exit 2 and one line naming the culprit', () => {
  let dir: string;
  let ok: string[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pilot-agent-bad-'));
    await writeFile(join(dir, 'not-executable'), '#!/bin/sh\n');
    await writeFile(join(dir, 'unknown-var.json'), '{"node":{"id":"{{ node_id }}","cluster":"{{ no_such_variable }}"}}');
    await writeFile(join(dir, 'rejected.json'), JSON.stringify({ static_resources: { clusters: [{ name: 'c', type: 'NOT_A_TYPE' }] } }));
    await writeFile(join(dir, 'a-file'), '');
    await execa('mkfifo', [join(dir, 'fifo.json')]);
    await mkdir(join(dir, 'xds-taken', 'XDS'), { recursive: true });
    await chmod(join(dir, 'not-executable'), 0o644);
    // Ports of its own: a run-time check must fail for the input under test, not for Istio's ports taken by another run.
    const ports = ['--proxyAdminPort', String(await freePort()), '--statusPort', '0', '--readinessPort', '0', '--prometheusPort', '0'];
    ok = [
      '--serviceregistry',
      'Other',
      '--ip',
      '127.0.0.1',
      '--configPath',
      join(dir, 'config'),
      '--binaryPath',
      envoyBin,
      '--discoveryAddress',
      '127.0.0.1:1',
      ...ports,
    ];
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const cases: { name: string; args: () => string[]; env?: Record<string, string>; line: RegExp; envoyMayStart?: boolean }[] = [
    { name: 'unknown proxy type', args: () => ['gateway', ...ok], line: /argument 'type'.*sidecar, router, ingress/ },
    {
      name: 'an unknown flag before the type, which would swallow it, is named (not the type)',
      args: () => ['--foo', 'router', ...ok],
      line: /^pilot-agent: --foo: unknown flag before the proxy type "router" .*put the type first$/,
    },
    { name: 'malformed duration', args: () => ['sidecar', ...ok, '--drainDuration', '45'], line: /--drainDuration.*'45'.*not a Go duration/ },
    { name: 'count that is not a number', args: () => ['sidecar', ...ok, '--concurrency', 'two'], line: /--concurrency.*'two'.*not a non-negative integer/ },
    {
      name: 'bad value from an env var',
      args: () => ['sidecar', ...ok],
      env: { ISTIO_DELTA_XDS: 'maybe' },
      line: /--deltaXds.*'maybe'.*ISTIO_DELTA_XDS.*not a boolean/,
    },
    { name: 'port out of range', args: () => ['sidecar', ...ok, '--proxyAdminPort', '70000'], line: /--proxyAdminPort.*'70000'.*not a port/ },
    { name: 'unknown registry', args: () => ['sidecar', ...ok, '--serviceregistry', 'Eureka'], line: /--serviceregistry.*'Eureka'.*Kubernetes, Consul, Other/ },
    {
      name: 'discovery address that does not parse',
      args: () => ['sidecar', ...ok, '--discoveryAddress', 'istio-pilot'],
      line: /^pilot-agent: --discoveryAddress: "istio-pilot" is not host:port$/,
    },
    { name: 'missing binary', args: () => ['sidecar', ...ok, '--binaryPath', join(dir, 'nope')], line: /^pilot-agent: --binaryPath: .*nope does not exist/ },
    {
      name: 'non-executable binary',
      args: () => ['sidecar', ...ok, '--binaryPath', join(dir, 'not-executable')],
      line: /^pilot-agent: --binaryPath: .*not-executable is not executable$/,
    },
    {
      name: 'unreadable template',
      args: () => ['sidecar', ...ok, '--templateFile', join(dir, 'missing.json')],
      line: /^pilot-agent: .*missing\.json: cannot read bootstrap template \(ENOENT\)$/,
    },
    {
      name: 'a FIFO as the template (was a start that hung)',
      args: () => ['sidecar', ...ok, '--templateFile', join(dir, 'fifo.json')],
      line: /^pilot-agent: .*fifo\.json: cannot read bootstrap template \(is not a regular file \(a FIFO\)\)$/,
    },
    {
      name: 'a device as the xDS token (was a read without end)',
      args: () => ['sidecar', ...ok, '--xdsTokenFile', '/dev/zero'],
      line: /^pilot-agent: --xdsTokenFile: cannot read \/dev\/zero \(is not a regular file \(a device\)\)$/,
    },
    {
      name: 'template variable with no value',
      args: () => ['sidecar', ...ok, '--templateFile', join(dir, 'unknown-var.json')],
      line: /^pilot-agent: .*unknown-var\.json: variable "no_such_variable" at \$\.node\.cluster has no value$/,
    },
    {
      name: 'unwritable configPath',
      args: () => ['sidecar', ...ok, '--configPath', join(dir, 'a-file', 'sub')],
      line: /^pilot-agent: --configPath: .*a-file\/sub is not a writable directory \(ENOTDIR\)$/,
    },
    {
      name: 'configPath under /proc/sys (mkdir -p spun there)',
      args: () => ['sidecar', ...ok, '--configPath', '/proc/sys/x'],
      line: /^pilot-agent: --configPath: \/proc\/sys\/x is not a writable directory \(ENOENT\)$/,
    },
    {
      name: 'a directory where the XDS socket goes',
      args: () => ['sidecar', ...ok, '--configPath', join(dir, 'xds-taken')],
      line: /^pilot-agent: --configPath: .*xds-taken\/XDS exists and is not a socket \(a directory\); remove it$/,
    },
    {
      name: 'a binary proto custom bootstrap',
      args: () => ['sidecar', ...ok, '--customConfigFile', join(dir, 'custom.pb')],
      line: /^pilot-agent: --customConfigFile: .*custom\.pb: binary proto bootstraps are not supported/,
    },
    {
      name: 'a bootstrap Envoy rejects',
      args: () => ['sidecar', ...ok, '--customConfigFile', join(dir, 'rejected.json')],
      line: /^pilot-agent: .*envoy-rev0\.json: Envoy rejects the bootstrap: .*NOT_A_TYPE/,
      envoyMayStart: true,
    },
    {
      name: 'a stats regex Envoy refuses at start (its validate mode passes it)',
      args: () => ['sidecar', ...ok, '--statsInclusionRegexps', '(unclosed'],
      line: /^pilot-agent: .*envoy-rev0\.json: Envoy rejects the bootstrap: missing \): \(unclosed$/,
      envoyMayStart: true,
    },
    {
      name: 'status port on the admin port',
      args: () => ['sidecar', ...ok, '--proxyAdminPort', '15000', '--statusPort', '15000'],
      line: /^pilot-agent: --statusPort: 15000 is also --proxyAdminPort/,
    },
    {
      name: 'Prometheus port on the admin port',
      args: () => ['sidecar', ...ok, '--proxyAdminPort', '15000', '--prometheusPort', '15000'],
      line: /^pilot-agent: --prometheusPort: 15000 is also --proxyAdminPort/,
    },
    {
      name: 'a negative global connection limit',
      args: () => ['sidecar', ...ok],
      env: { PROXY_CONFIG: '{"connectionSettings":{"globalDownstreamConnectionLimit":-1}}' },
      line: /^pilot-agent: env PROXY_CONFIG: field connectionSettings\.globalDownstreamConnectionLimit: -1 is not a connection limit/,
    },
    {
      name: 'a connection limit env that is not a number',
      args: () => ['sidecar', ...ok],
      env: { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: 'lots' },
      line: /^pilot-agent: env ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: "lots" is not a connection limit/,
    },
    {
      name: 'runtimeValues that is not a string map',
      args: () => ['sidecar', ...ok],
      env: { PROXY_CONFIG: '{"runtimeValues":{"re2.max_program_size.error_level":1000}}' },
      line: /^pilot-agent: env PROXY_CONFIG: field runtimeValues must be an object of strings/,
    },
    {
      name: 'unknown Envoy log component',
      args: () => ['sidecar', ...ok, '--proxyComponentLogLevel', 'nosuch:verbose'],
      line: /--proxyComponentLogLevel.*'nosuch:verbose'.*"nosuch" is not an Envoy log component/,
    },
    { name: 'absurd concurrency', args: () => ['sidecar', ...ok, '--concurrency', '100000'], line: /--concurrency.*'100000'.*more than 512 worker threads/ },
    { name: 'cert resync past the longest timer', args: () => ['sidecar', ...ok, '--certResync', '1000h'], line: /--certResync.*'1000h'.*must be at most/ },
    {
      name: 'termination drain past the longest timer',
      args: () => ['sidecar', ...ok, '--terminationDrainDuration', '1000h'],
      line: /--terminationDrainDuration.*'1000h'.*must be at most/,
    },
    { name: 'cert resync of a nanosecond', args: () => ['sidecar', ...ok, '--certResync', '1ns'], line: /--certResync.*'1ns'.*must be at least 1s/ },
    {
      name: 'parent shutdown before the drain ends',
      args: () => ['sidecar', ...ok, '--drainDuration', '10m', '--parentShutdownDuration', '1s'],
      line: /^pilot-agent: --parentShutdownDuration: 1s is shorter than --drainDuration \(600s\)/,
    },
    {
      name: 'Kubernetes registry without pod env',
      args: () => ['sidecar', ...ok, '--serviceregistry', 'Kubernetes'],
      env: { INSTANCE_IP: '198.19.0.1' },
      line: /^pilot-agent: env POD_NAME: is not set/,
    },
    {
      name: 'DNS forward timeout that does not parse',
      args: () => ['sidecar', ...ok],
      env: { ISTIO_META_DNS_CAPTURE: 'true', DNS_FORWARD_TIMEOUT: 'soon' },
      line: /^pilot-agent: env DNS_FORWARD_TIMEOUT: .*not a Go duration/,
    },
    {
      name: 'DNS proxy address without a port',
      args: () => ['sidecar', ...ok],
      env: { ISTIO_META_DNS_CAPTURE: 'true', DNS_PROXY_ADDR: 'localhost' },
      line: /^pilot-agent: env DNS_PROXY_ADDR: "localhost" is not host:port/,
    },
    {
      name: 'metadata JSON that does not parse',
      args: () => ['sidecar', ...ok],
      env: { ISTIO_METAJSON_LABELS: '{nope' },
      line: /^pilot-agent: env ISTIO_METAJSON_LABELS: is not valid JSON/,
    },
    {
      name: 'Wasm fetch timeout that does not parse',
      args: () => ['sidecar', ...ok],
      env: { WASM_HTTP_REQUEST_TIMEOUT: 'soon' },
      line: /^pilot-agent: env WASM_HTTP_REQUEST_TIMEOUT: .*not a Go duration/,
    },
    {
      name: 'Wasm remote load switch that is not a boolean',
      args: () => ['sidecar', ...ok],
      env: { ISTIO_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION: 'yes' },
      line: /^pilot-agent: env ISTIO_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION: .*not a boolean/,
    },
    {
      name: 'Wasm retries of zero',
      args: () => ['sidecar', ...ok],
      env: { WASM_HTTP_REQUEST_MAX_RETRIES: '0' },
      line: /^pilot-agent: env WASM_HTTP_REQUEST_MAX_RETRIES: .*at least 1/,
    },
    {
      name: 'Wasm blocked range that is not a CIDR',
      args: () => ['sidecar', ...ok],
      env: { BLOCKED_CIDRS_IN_WASM_FETCH: '198.18.0.0/15,nope' },
      line: /^pilot-agent: env BLOCKED_CIDRS_IN_WASM_FETCH: "nope" is not a CIDR/,
    },
  ];

  for (const testCase of cases) {
    it(testCase.name, async () => {
      const result = await runAgent(testCase.args(), testCase.env);
      assert.equal(result.exitCode, 2, `exit code; stderr: ${result.stderr}`);
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
      assert.match(lines[0]!, testCase.line);
      // Epoch 0 starts before its bootstrap is judged (envoy-proxy.ts): the rejection stops it.
      if (!testCase.envoyMayStart) assert.doesNotMatch(result.stdout, /envoy started/);
    });
  }

  it('the Envoy log components the agent accepts are those of the Envoy binary', async () => {
    // Fails when .tools/bin/envoy is upgraded: regenerate with scripts/envoy-components.ts.
    assert.deepEqual([...envoyComponents].sort(), await listEnvoyLoggers(envoyBin));
  });

  it('version and help end with 0', async () => {
    const version = await execa(nodeBin, [agentBin, 'version'], { reject: false });
    assert.equal(version.exitCode, 0);
    assert.match(version.stdout, /^pilot-agent \d+\.\d+\.\d+$/);
    const help = await execa(nodeBin, [agentBin, 'proxy', '--help'], { reject: false });
    assert.equal(help.exitCode, 0);
    assert.match(help.stdout, /--discoveryAddress <host:port>/);
  });
});

describe('--configPath keeps the mode of a directory that exists', () => {
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'pilot-agent-config-path-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  const printBootstrap = (configPath: string) =>
    runAgent(['sidecar', '--serviceregistry', 'Other', '--ip', '127.0.0.1', '--configPath', configPath, '--print-bootstrap']);
  const modeOf = async (path: string) => (await stat(path)).mode & 0o7777;

  it("an existing world-writable directory of root's (/tmp, a pod's 0777 emptyDir) stays as it is, quietly", async () => {
    for (const [name, mode] of [['sticky', 0o1777], ['empty-dir', 0o777]] as const) {
      const shared = join(dir, name);
      await mkdir(shared);
      await chmod(shared, mode);
      const result = await printBootstrap(shared);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(await modeOf(shared), mode);
      assert.equal(result.stderr, '');
    }
  });

  it('an existing directory another user owns stays as it is, with a warning naming the uid', async () => {
    const foreign = join(dir, 'foreign');
    await mkdir(foreign);
    await chmod(foreign, 0o777);
    await chown(foreign, 65534, 65534);
    const result = await printBootstrap(foreign);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stderr, /^pilot-agent: warning: --configPath .*foreign belongs to uid 65534 \(mode 0777\); left as is/);
  });

  it('a normal start leaves an existing 0755 directory as it is, and logs nothing about it', async () => {
    const open = join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o755);
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', args: ['--configPath', open] });
    try {
      await agent.log.waitFor((entry) => entry.msg === 'envoy started', 15_000, 'envoy started');
      assert.equal(await modeOf(open), 0o755);
      assert.equal(agent.log.find((entry) => /config directory/.test(String(entry.msg))), undefined);
    } finally {
      assert.equal((await agent.stop()).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
    }
  });

  it('a missing directory is created 0700, parents too', async () => {
    const fresh = join(dir, 'a', 'b');
    const result = await printBootstrap(fresh);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.equal(await modeOf(fresh), 0o700);
    assert.equal(await modeOf(join(dir, 'a')), 0o700);
    assert.equal(result.stderr, '');
  });
});
