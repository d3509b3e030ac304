/**
 * A JSON-aware template: the template is JSON, and a string that is exactly
 * `"{{ name }}"` is replaced by the variable's JSON value (object, number…);
 * `"{{ ...name }}"` as an array element splices an array in; `{{ name }}`
 * inside a longer string interpolates a scalar. A variable whose value is
 * null drops its key, which is how optional sections (tracing) disappear.
 * Values are never spliced as text, so no value can break the JSON.
 */
export type TemplateVariables = Readonly<Record<string, unknown>>;

const whole = /^\{\{\s*([A-Za-z_][\w]*)\s*\}\}$/;
const spread = /^\{\{\s*\.\.\.([A-Za-z_][\w]*)\s*\}\}$/;
const inline = /\{\{\s*([A-Za-z_][\w]*)\s*\}\}/g;

export class TemplateError extends Error {
  override name = 'TemplateError';
}

/** Parses and renders a template; throws TemplateError naming the variable. */
export function renderTemplate(text: string, variables: TemplateVariables): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new TemplateError(`is not valid JSON (${(error as Error).message})`);
  }
  return renderValue(parsed, variables, '$');
}

function renderValue(value: unknown, variables: TemplateVariables, path: string): unknown {
  if (typeof value === 'string') return renderString(value, variables, path);
  if (Array.isArray(value)) return renderArray(value, variables, path);
  if (value !== null && typeof value === 'object') return renderObject(value as Record<string, unknown>, variables, path);
  return value;
}

function renderString(text: string, variables: TemplateVariables, path: string): unknown {
  const name = whole.exec(text)?.[1];
  if (name) return lookup(name, variables, path);
  return text.replace(inline, (_, inner: string) => {
    const found = lookup(inner, variables, path);
    if (found === null || typeof found === 'object') {
      throw new TemplateError(`variable "${inner}" at ${path} is not a scalar and cannot be interpolated into a string`);
    }
    return String(found);
  });
}

function renderArray(items: unknown[], variables: TemplateVariables, path: string): unknown[] {
  return items.flatMap((item, index) => {
    const name = typeof item === 'string' ? spread.exec(item)?.[1] : undefined;
    if (!name) return [renderValue(item, variables, `${path}[${index}]`)];
    const found = lookup(name, variables, path);
    if (!Array.isArray(found)) throw new TemplateError(`variable "${name}" at ${path} must be a list to be spread`);
    return found;
  });
}

function renderObject(object: Record<string, unknown>, variables: TemplateVariables, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(object)) {
    const rendered = renderValue(item, variables, `${path}.${key}`);
    if (rendered !== null) out[key] = rendered;
  }
  return out;
}

function lookup(name: string, variables: TemplateVariables, path: string): unknown {
  if (!Object.hasOwn(variables, name) || variables[name] === undefined) {
    throw new TemplateError(`variable "${name}" at ${path} has no value`);
  }
  return variables[name];
}
