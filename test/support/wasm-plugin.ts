import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import wabtInit from 'wabt';
import { repoRoot } from './paths.ts';

/** The header plugin (header-plugin.wat) compiled now: Envoy answers with `x-wasm-plugin: loaded` when it runs. */
export async function headerPluginWasm(): Promise<Buffer> {
  const wabt = await wabtInit();
  const source = await readFile(join(repoRoot, 'test/support/header-plugin.wat'), 'utf8');
  const module = wabt.parseWat('header-plugin.wat', source);
  try {
    return Buffer.from(module.toBinary({}).buffer);
  } finally {
    module.destroy();
  }
}
