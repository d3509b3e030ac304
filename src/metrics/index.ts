// The agent's own metrics: what it used of prom-client, at a fraction of its
// memory, and no collector waking the idle agent (bench/cost.ts; the figures
// are in docs/benchmarks.md). One import for the metric users.
export { Counter, Gauge } from './counter-gauge.ts';
export { Histogram } from './histogram.ts';
export { Registry } from './registry.ts';
