#!/usr/bin/env node
import module from 'node:module';

// Compiled code from the build (scripts/warm-compile-cache.mjs): less CPU at
// start, which a node of pods starting together pays once per pod. Without
// it (another uid, a fresh checkout) the agent compiles as usual.
module.enableCompileCache?.(new URL('../dist/compile-cache/', import.meta.url).pathname);
const { main } = await import('../dist/bundle/pilot-agent.js');

await main();
