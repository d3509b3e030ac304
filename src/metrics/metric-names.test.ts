import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Gauge } from './index.ts';

/** Label names are checked where a metric is declared, and label sets where a value is set: a typo fails loudly, never a silent new series. */
test('a label name must be a Prometheus label name, and not le (the histogram bound): the error names the metric and the label', () => {
  for (const bad of ['1kind', 'kind-x', 'x kind', 'k\u00e9', 'le', '']) {
    assert.throws(() => new Counter({ name: 'a_total', help: 'A', labelNames: ['ok', bad] }), (error: Error) => {
      assert.equal(error.message, `a_total: invalid label name: ${bad}`);
      return true;
    }, JSON.stringify(bad));
  }
  for (const good of ['kind', '_k', 'K9_x', 'lex', 'ale']) assert.doesNotThrow(() => new Counter({ name: 'b_total', help: 'B', labelNames: [good] }), good);
});

test('a label not declared is refused, naming it and the ones declared (none for a metric without labels)', () => {
  const counter = new Counter<'code'>({ name: 'c_total', help: 'C', labelNames: ['code'] });
  assert.throws(() => counter.inc({ kind: 'x' } as never), /^Error: c_total: label kind is not one of code$/);
  const plain = new Gauge({ name: 'g', help: 'G' });
  assert.throws(() => plain.set({ code: '1' } as never, 1), /^Error: g: label code is not one of \(none\)$/);
});

test('a metric without labels has one series, the same whether set with or without an empty label set', async () => {
  const plain = new Gauge({ name: 'g', help: 'G' });
  plain.set(1);
  plain.set({}, 2);
  assert.equal(await plain.text(), '# HELP g G\n# TYPE g gauge\ng 2\n');
});
