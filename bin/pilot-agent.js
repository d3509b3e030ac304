#!/usr/bin/env -S node --disable-sigusr1
// --disable-sigusr1: SIGUSR1 must never open Node's inspector on 127.0.0.1:9229,
// which every container of the pod shares and which would expose the workload
// key held in memory. The agent also listens on SIGUSR1 itself (cli/process-guard.ts)
// for runs started as `node bin/pilot-agent.js`, where this line is not read.
import module from 'node:module';

// Compiled code from the build (scripts/warm-compile-cache.mjs): less CPU at
// start, which a node of pods starting together pays once per pod. Without
// it (another uid, a fresh checkout) the agent compiles as usual.
module.enableCompileCache?.(new URL('../dist/compile-cache/', import.meta.url).pathname);
const { main } = await import('../dist/bundle/pilot-agent.js');

await main();
