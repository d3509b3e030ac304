import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contentType, escapeHelp, escapeLabelValue, formatFamilies, formatFamily, formatValue } from './exposition.ts';

test('label values escape backslash, double quote and newline, nothing else', () => {
  const cases: [string, string][] = [
    ['plain', 'plain'],
    ['a\\b', 'a\\\\b'],
    ['say "hi"', 'say \\"hi\\"'],
    ['two\nlines', 'two\\nlines'],
    ['\\"\n', '\\\\\\"\\n'],
    ['tab\tand {braces}=,', 'tab\tand {braces}=,'],
  ];
  for (const [input, expected] of cases) assert.equal(escapeLabelValue(input), expected, JSON.stringify(input));
});

test('HELP escapes backslash and newline but keeps double quotes', () => {
  const cases: [string, string][] = [
    ['Seconds "left"', 'Seconds "left"'],
    ['a\\b', 'a\\\\b'],
    ['one\ntwo', 'one\\ntwo'],
  ];
  for (const [input, expected] of cases) assert.equal(escapeHelp(input), expected, JSON.stringify(input));
});

test('values: integers and floats as numbers, the special floats as Prometheus spells them', () => {
  const cases: [number, string][] = [
    [0, '0'],
    [42, '42'],
    [-1.5, '-1.5'],
    [0.001, '0.001'],
    [1e21, '1e+21'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
    [NaN, 'NaN'],
  ];
  for (const [input, expected] of cases) assert.equal(formatValue(input), expected, String(input));
});

test('a family is HELP, TYPE, then one line per sample with its labels in order', () => {
  const text = formatFamily({
    name: 'x_total', help: 'Things "counted"\nhere', type: 'counter',
    samples: [{ name: 'x_total', labels: {}, value: 1 }, { name: 'x_total', labels: { type: 'a"b', code: 7 }, value: 2 }],
  });
  assert.equal(text, '# HELP x_total Things "counted"\\nhere\n# TYPE x_total counter\nx_total 1\nx_total{type="a\\"b",code="7"} 2\n');
});

test('a family without samples still has its HELP and TYPE', () => {
  assert.equal(formatFamily({ name: 'g', help: 'h', type: 'gauge', samples: [] }), '# HELP g h\n# TYPE g gauge\n');
});

test('families are joined by a blank line, and none is no text', () => {
  const family = (name: string) => ({ name, help: 'h', type: 'gauge' as const, samples: [{ name, labels: { a: 1, b: 'x' }, value: 0 }] });
  assert.equal(formatFamilies([family('a'), family('b')]), '# HELP a h\n# TYPE a gauge\na{a="1",b="x"} 0\n\n# HELP b h\n# TYPE b gauge\nb{a="1",b="x"} 0\n');
  assert.equal(formatFamilies([]), '');
});

test('escapes every backslash, quote and newline, not only the first', () => {
  assert.equal(escapeLabelValue('\\\\""\n\n'), '\\\\\\\\\\"\\"\\n\\n');
  assert.equal(escapeHelp('\\\\\n\n'), '\\\\\\\\\\n\\n');
});

test('the page is served as the Prometheus text format 0.0.4, which every scraper reads', () => {
  assert.match(contentType, /^text\/plain; version=0\.0\.4(;|$)/);
  assert.match(contentType, /charset=utf-8/);
});
