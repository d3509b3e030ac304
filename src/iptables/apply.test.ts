import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyCaptureRules } from './apply.ts';
import { renderRestoreInput } from './render.ts';
import type { RuleSet } from './rules.ts';

const ruleSet: RuleSet = { table: 'nat', chains: ['ISTIO_OUTPUT'], rules: [{ chain: 'OUTPUT', spec: ['-p', 'tcp', '-j', 'ISTIO_OUTPUT'] }] };

describe('applyCaptureRules', () => {
  it('feeds the whole rule set to one iptables-restore --noflush', async () => {
    const calls: unknown[] = [];
    await applyCaptureRules(ruleSet, { run: async (...call) => void calls.push(call) });
    assert.deepEqual(calls, [['iptables-restore', ['--noflush'], renderRestoreInput(ruleSet)]]);
  });

  it("reports the tool's first stderr line as a runtime failure", async () => {
    const run = async () => {
      throw Object.assign(new Error('Command failed'), { stderr: 'iptables-restore: line 3 failed\nmore' });
    };
    await assert.rejects(applyCaptureRules(ruleSet, { run, restoreBinary: '/sbin/iptables-restore' }), {
      message: '/sbin/iptables-restore failed: iptables-restore: line 3 failed',
    });
  });

  it('fails cleanly when the binary does not exist', async () => {
    await assert.rejects(applyCaptureRules(ruleSet, { restoreBinary: '/nonexistent/iptables-restore' }), /^Error: \/nonexistent\/iptables-restore failed: /);
  });
});
