#!/bin/env -S MALLOC_ARENA_MAX=2 node --disable-sigusr1 --max-semi-space-size=1 --v8-pool-size=1 --no-concurrent-recompilation
// --disable-sigusr1: SIGUSR1 must never open Node's inspector on 127.0.0.1:9229,
// which every container of the pod shares and which would expose the workload
// key held in memory. The agent also listens on SIGUSR1 itself (cli/process-guard.ts)
// for runs started as `node bin/pilot-agent.js`, where this line is not read.
// The rest is what each pod pays (docs/benchmarks.md#node-flags): a 1 MB
// semi-space (about 1 MB of the young generation is live at ready), one V8
// worker and two malloc arenas: ~4.5 MB less anonymous memory, 10 threads → 7.
// libuv keeps its 4 workers: the key is made on one while the bootstrap's
// files and the CA's name lookup must not queue behind it on the way to spawn.
// Optimized code is compiled on the main thread: on the worker, its large
// short-lived allocations land in the main malloc arena among the main thread's
// and pin it, ~10 MB more under scrapes (docs/benchmarks.md, Soak); V8's cache tag is unchanged.
// /bin/env, not /usr/bin/env: kernels before 5.1 cut this line at 127 characters.
import module from 'node:module';

// Compiled code from the build (scripts/warm-compile-cache.mjs): less CPU at
// start, which a node of pods starting together pays once per pod. Without
// it (another uid, a fresh checkout) the agent compiles as usual.
module.enableCompileCache?.(new URL('../dist/compile-cache/', import.meta.url).pathname);
const { main } = await import('../dist/bundle/pilot-agent.js');

await main();
