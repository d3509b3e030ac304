// Fills dist/compile-cache with V8's code for every bundle chunk, so an agent
// starting in a pod reads compiled code instead of compiling ~600 KB of
// JavaScript (bench/pod-start.ts: about 8 % less CPU from exec to ready).
// Node keeps one subdirectory per uid: run this as each uid that runs the
// agent (scripts/build-agent.sh does it for its own uid and for 1337).
import { readdirSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const bundle = fileURLToPath(new URL('../dist/bundle/', import.meta.url));
const cache = fileURLToPath(new URL('../dist/compile-cache/', import.meta.url));
const enabled = module.enableCompileCache(cache);
if (enabled.status === module.constants.compileCacheStatus.FAILED) {
  console.error(`warm-compile-cache: ${enabled.message}`);
  process.exit(1);
}
// Loading a chunk only defines its functions; nothing starts.
for (const file of readdirSync(bundle).filter((name) => name.endsWith('.js')).sort()) await import(`${bundle}${file}`);
module.flushCompileCache();
