// The agent's own metrics: what it used of prom-client, at a fraction of its
// memory (bench/cost.ts). One import for the metric users.
export { Counter, Gauge } from './counter-gauge.ts';
export { Histogram } from './histogram.ts';
export { Registry } from './registry.ts';
