import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderTemplate, TemplateError } from './template.ts';

test('whole-string placeholders become JSON values of any type', () => {
  const out = renderTemplate('{"a":"{{ n }}","b":"{{obj}}","c":"{{ s }}"}', { n: 1, obj: { x: [1] }, s: 'text' });
  assert.deepEqual(out, { a: 1, b: { x: [1] }, c: 'text' });
});

test('spread placeholders splice lists; null drops the key', () => {
  const out = renderTemplate('{"l":[1,"{{ ...more }}",4],"gone":"{{ none }}"}', { more: [2, 3], none: null });
  assert.deepEqual(out, { l: [1, 2, 3, 4] });
});

test('inline placeholders interpolate scalars into strings', () => {
  assert.deepEqual(renderTemplate('["{{ host }}:{{port}}"]', { host: 'h', port: 80 }), ['h:80']);
});

test('values cannot break out of the JSON', () => {
  const out = renderTemplate('{"id":"{{ id }}"}', { id: '","admin":{}' });
  assert.deepEqual(out, { id: '","admin":{}' });
});

test('errors name the variable and where it is', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['{"a":{"b":"{{ missing }}"}}', {}, /variable "missing" at \$\.a\.b has no value/],
    ['["{{ ...x }}"]', { x: 1 }, /must be a list/],
    ['["p{{ x }}"]', { x: { y: 1 } }, /not a scalar/],
    ['{"a":', {}, /not valid JSON/],
  ];
  for (const [text, variables, message] of cases) {
    assert.throws(() => renderTemplate(text, variables), (error: unknown) => error instanceof TemplateError && message.test(error.message));
  }
});
