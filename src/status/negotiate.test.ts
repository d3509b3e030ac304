import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acceptsGzip, wantsOpenMetrics } from './negotiate.ts';

const prometheusDefault = [
  'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5',
  'application/openmetrics-text;version=0.0.1;q=0.4',
  'text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3',
  'text/plain;version=0.0.4;q=0.2',
  '*/*;q=0.1',
].join(',');

const openMetricsCases: [string | undefined, boolean][] = [
  [undefined, false],
  ['', false],
  ['*/*', false],
  ['text/plain', false],
  ['application/openmetrics-text', true],
  [prometheusDefault, true],
  ['text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=0.5', false],
  ['text/plain;q=0.2, application/openmetrics-text;version=1.0.0;q=0.8', true],
  ['application/openmetrics-text;q=0, text/plain', false],
  ['APPLICATION/OpenMetrics-Text ; Version=1.0.0', true],
  ['application/json, application/openmetrics-text', true],
];
for (const [accept, want] of openMetricsCases) {
  test(`wantsOpenMetrics(${JSON.stringify(accept)}) is ${want}`, () => assert.equal(wantsOpenMetrics(accept), want));
}

const gzipCases: [string | undefined, boolean][] = [
  [undefined, false],
  ['', false],
  ['identity', false],
  ['gzip', true],
  ['deflate, gzip;q=0.5', true],
  ['gzip;q=0', false],
  ['*', true],
  ['*, gzip;q=0', false],
  ['br, GZIP', true],
];
for (const [header, want] of gzipCases) test(`acceptsGzip(${JSON.stringify(header)}) is ${want}`, () => assert.equal(acceptsGzip(header), want));
