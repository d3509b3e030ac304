// The agent's own metrics: what it used of prom-client, at a fraction of its
// memory (bench/cost.ts). Measured when prom-client left (23df25b, idle agent
// with one Envoy, medians of 3): it cost +1.3 MB anonymous inside the bundle
// (+6.6 MB imported alone into node), and its default collectors sampled the
// event loop every 10 ms, waking the idle agent. One import for the metric users.
export { Counter, Gauge } from './counter-gauge.ts';
export { Histogram } from './histogram.ts';
export { Registry } from './registry.ts';
