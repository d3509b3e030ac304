/**
 * The agent starts from V8's compiled code made at build time
 * (scripts/warm-compile-cache.mjs), for root and for uid 1337, the proxy's
 * uid in a pod: Node's own debug output says each bundle file's cache was
 * read and accepted, so the start compiles nothing it has compiled before.
 */
import assert from 'node:assert/strict';
import { dirname } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { agentBin, nodeBin, uidCannotRunCheckout } from '../support/paths.ts';

const accepted = /V8 code cache for ESM \S+\/dist\/bundle\/pilot-agent\.js was accepted/;

async function startDebug(asUid?: number, viaShebang = false): Promise<string> {
  // Through the shebang (the image's entry point), node comes from the PATH and runs with --disable-sigusr1.
  const env = { NODE_DEBUG_NATIVE: 'COMPILE_CACHE', PATH: `${dirname(nodeBin)}:${process.env.PATH ?? ''}` };
  const entry = viaShebang ? [agentBin, 'version'] : [nodeBin, agentBin, 'version'];
  const command = asUid === undefined ? entry : ['setpriv', `--reuid=${asUid}`, `--regid=${asUid}`, '--clear-groups', '--', ...entry];
  const result = await execa(command[0]!, command.slice(1), { env, reject: false, timeout: 20_000 });
  assert.equal(result.exitCode, 0, result.stderr);
  return `${result.stdout}\n${result.stderr}`;
}

describe('the start reads the compile cache made at build time', () => {
  it('as the user that built it', async () => {
    assertBundleFresh();
    assert.match(await startDebug(), accepted);
  });

  it(
    'as uid 1337, the proxy in a pod, started as node runs it and through the shebang',
    { skip: process.getuid?.() !== 0 ? 'needs root to run as uid 1337' : uidCannotRunCheckout(1337) },
    async () => {
      assert.match(await startDebug(1337), accepted);
      assert.match(await startDebug(1337, true), accepted);
    },
  );
});
