import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderTemplate, TemplateError } from './template.ts';

/** Edges of template.test.ts that mutation testing showed untested. */
const fails = (text: string, variables: Record<string, unknown>, message: RegExp) =>
  assert.throws(
    () => renderTemplate(text, variables),
    (error: unknown) => error instanceof TemplateError && error.name === 'TemplateError' && message.test(error.message),
    text,
  );

test('a spread is a whole array element only, with or without spaces; inside a longer string or a nested array it is not', () => {
  const more = { more: [2, 3] };
  assert.deepEqual(renderTemplate('[1,"{{...more}}",4]', more), [1, 2, 3, 4]);
  assert.deepEqual(renderTemplate('[1,"{{  ...more  }}",4]', more), [1, 2, 3, 4]);
  assert.deepEqual(renderTemplate('["x{{ ...more }}"]', more), ['x{{ ...more }}']);
  assert.deepEqual(renderTemplate('["{{ ...more }}x"]', more), ['{{ ...more }}x']);
  assert.deepEqual(renderTemplate('[["{{ ...more }}"]]', more), [[2, 3]], 'spliced into the inner array, not the outer');
});

test('JSON nulls in the template stay in arrays and drop keys', () => {
  assert.deepEqual(renderTemplate('[null,1,{"a":null,"b":2}]', {}), [null, 1, { b: 2 }]);
});

test('a null or object value cannot be interpolated into a string', () => {
  fails('["p{{ x }}"]', { x: null }, /variable "x" at \$\[0\] is not a scalar/);
  fails('{"a":"p{{ x }}"}', { x: [1] }, /variable "x" at \$\.a is not a scalar/);
});

test('a variable set to undefined has no value; errors in arrays name the element', () => {
  fails('{"a":"{{ x }}"}', { x: undefined }, /^variable "x" at \$\.a has no value$/);
  fails('{"a":[1,"{{ missing }}"]}', {}, /^variable "missing" at \$\.a\[1\] has no value$/);
  fails('{"a":[1,["{{ ...x }}"]]}', { x: 'text' }, /^variable "x" at \$\.a\[1\] must be a list to be spread$/);
});
