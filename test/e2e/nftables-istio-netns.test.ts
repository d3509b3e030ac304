/**
 * Our `istio-iptables --native-nftables` against Istio's: for each case of
 * src/nftables/testdata/cases.json, the `nft list ruleset` our command
 * leaves in a fresh pod namespace must be the one Istio's leaves, as
 * recorded in src/nftables/testdata/<case>.ruleset. With Istio's binary at
 * hand (ISTIO_PILOT_AGENT=path to Istio's pilot-agent, built with
 * `go build ./pilot/cmd/pilot-agent` in Istio's source) each case also runs
 * it, in a namespace of its own, and compares live; UPDATE_GOLDEN=1 then
 * records its ruleset as the fixture (review the diff before committing).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup, type Cleanup } from '../support/cleanup.ts';
import { makePodPair, runIptables, type PodPair } from '../support/iptables-pods.ts';
import { nftCases as cases, nftTestdata as testdata, type NftCase as Case } from '../support/nft-cases.ts';
import { nftRuleset, nftSkipReason } from '../support/nft-pods.ts';

const skip = (await nftSkipReason()) ?? false;
const istioAgent = process.env['ISTIO_PILOT_AGENT'];
const istioSkip = istioAgent !== undefined && existsSync(istioAgent) ? skip : 'set ISTIO_PILOT_AGENT to Istio\'s pilot-agent to compare live';


/** A pod for the case: dual-stack under ISTIO_DUAL_STACK when it wants IPv6, and its resolv.conf (`ip netns exec` mounts /etc/netns/<ns>/). */
async function podFor(cleanup: Cleanup, label: string, testCase: Case): Promise<{ pair: PodPair; env: Record<string, string> }> {
  const pair = await makePodPair(cleanup, label, { v4: true, v6: testCase.ipv6 });
  if (testCase.resolv !== undefined) {
    const dir = `/etc/netns/${pair.appNs}`;
    await mkdir(dir, { recursive: true });
    cleanup.defer(() => rm(dir, { recursive: true, force: true }));
    await writeFile(`${dir}/resolv.conf`, testCase.resolv.map((server) => `nameserver ${server}\n`).join(''));
  }
  return { pair, env: { ...testCase.env, ...(testCase.ipv6 ? { ISTIO_DUAL_STACK: 'true' } : {}) } };
}

describe("istio-iptables --native-nftables writes Istio's ruleset, flag for flag", { timeout: 300_000 }, () => {
  const cleanup = suiteCleanup();

  cases.forEach((testCase, index) => {
    it(`${testCase.name}: ${testCase.about}: the recorded ruleset of Istio's`, { skip }, async () => {
      assertBundleFresh();
      const { pair, env } = await podFor(cleanup, `nc${index}`, testCase);
      const result = await runIptables(pair.appNs, [...testCase.args, '--native-nftables'], { env });
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(await nftRuleset(pair.appNs), await readFile(new URL(`${testCase.name}.ruleset`, testdata), 'utf8'));
    });

    it(`${testCase.name}: the same ruleset as Istio's own binary leaves`, { skip: istioSkip }, async () => {
      const ours = await podFor(cleanup, `no${index}`, testCase);
      assert.equal((await runIptables(ours.pair.appNs, [...testCase.args, '--native-nftables'], { env: ours.env })).exitCode, 0);
      const theirs = await podFor(cleanup, `ni${index}`, testCase);
      const run = await execa('ip', ['netns', 'exec', theirs.pair.appNs, istioAgent!, 'istio-iptables', ...testCase.args, '--native-nftables'], {
        env: theirs.env,
        reject: false,
        timeout: 60_000,
      });
      assert.equal(run.exitCode, 0, run.stderr);
      const istio = await nftRuleset(theirs.pair.appNs);
      if (process.env['UPDATE_GOLDEN'] === '1') await writeFile(new URL(`${testCase.name}.ruleset`, testdata), istio);
      assert.equal(await nftRuleset(ours.pair.appNs), istio);
    });
  });
});
