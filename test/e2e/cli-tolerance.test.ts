/**
 * The command line is as tolerant as Istio's where Istio's is (its cobra
 * commands ignore unknown flags), and as strict where it is not: a bad value
 * of a known setting is still exit 2 naming it (cli-bad-input.test.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { assertGone, startAgent } from '../support/agent.ts';
import { agentBin, nodeBin } from '../support/paths.ts';

const cli = (args: string[]) => {
  assertBundleFresh();
  return execa(nodeBin, [agentBin, ...args], { reject: false, timeout: 30_000, env: {}, extendEnv: false });
};
const printBootstrap = ['--serviceregistry', 'Other', '--ip', '127.0.0.1', '--print-bootstrap'];

describe("a command line as tolerant as Istio's", () => {
  it('an unknown flag (with or without a value) is one warning, not exit 2', async () => {
    const result = await cli(['proxy', 'sidecar', '--noSuchFlag=1', '--anotherOne', 'value', ...printBootstrap]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).node.id.split('~')[0], 'sidecar');
    const warnings = result.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; args: string[] });
    assert.deepEqual(warnings.map((line) => line.args), [['--noSuchFlag=1', '--anotherOne', 'value']]);
  });

  it('unknown flags before the type are ignored as Istio ignores them (one without = takes the next word as its value)', async () => {
    const result = await cli(['proxy', '--noSuchFlag=1', '--another', 'value', 'router', ...printBootstrap]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).node.id.split('~')[0], 'router');
    const warnings = result.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; args: string[] });
    assert.deepEqual(warnings.map((line) => line.args), [['--noSuchFlag=1', '--another', 'value']]);
  });

  it('`proxy` with no type is a sidecar', async () => {
    const result = await cli(['proxy', ...printBootstrap]);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(JSON.parse(result.stdout).node.id, /^sidecar~127\.0\.0\.1~/);
    assert.equal(result.stderr, '');
  });

  it('a bad value of a known flag is still exit 2 naming it', async () => {
    const result = await cli(['proxy', 'sidecar', '--proxyLogLevel', 'loud', ...printBootstrap]);
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr, /--proxyLogLevel.*"loud" is not an Envoy log level/);
  });

  it("--proxyLogLevel=info,misc:error (the logLevel annotation's form) runs Envoy with -l info and the component level", async () => {
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', args: ['--proxyLogLevel=info,misc:error', '--proxyComponentLogLevel=upstream:debug'] });
    try {
      await agent.log.waitFor((entry) => entry.msg === 'envoy started', 15_000, 'envoy started');
      const [pid] = agent.envoyPids();
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      assert.equal(argv[argv.indexOf('-l') + 1], 'info');
      assert.equal(argv[argv.indexOf('--component-log-level') + 1], 'misc:error', "the annotation's component levels win, as in Istio");
    } finally {
      assert.equal((await agent.stop()).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
    }
  });

  it("version --short and -o json|yaml print Istio's shapes", async () => {
    const short = await cli(['version', '--short']);
    assert.match(short.stdout, /^client version: \d+\.\d+\.\d+$/);
    const json = JSON.parse((await cli(['version', '-o', 'json'])).stdout) as { clientVersion: Record<string, string> };
    assert.deepEqual(Object.keys(json.clientVersion), ['version', 'revision', 'golang_version', 'status', 'tag']);
    assert.match((await cli(['version', '-o', 'yaml'])).stdout, /^clientVersion:\n {2}version: "\d+\.\d+\.\d+"\n/);
    assert.equal((await cli(['version', '-o', 'xml'])).exitCode, 2);
  });
});
