import { AgentError } from '../shared/errors.ts';
import { isMapping, type InjectionTemplate, type Mapping } from './types.ts';
import { parseYaml } from './yaml.ts';

/** The names a template may use, and their values for one pod. */
export type TemplateVars = Readonly<Record<string, unknown>>;

const wholeValue = /^\{\{\s*yaml\s+([A-Za-z]\w*)\s*\}\}$/;
const inlineText = /\{\{\s*([A-Za-z]\w*)\s*\}\}/g;

const badTemplate = (path: string, reason: string) => new AgentError('BAD_TEMPLATE', `${path}: ${reason}`);

/** Reads and checks the template's shape; placeholders stay until rendering. */
export function parseTemplate(text: string, path: string): InjectionTemplate {
  const raw = parseYaml(text, path);
  if (!isMapping(raw)) throw badTemplate(path, 'must be a YAML mapping');
  const known = ['initContainers', 'containers', 'volumes', 'holdApplicationLifecycle', 'nativeSidecarLifecycle'];
  const unknown = Object.keys(raw).find((key) => !known.includes(key));
  if (unknown !== undefined) throw badTemplate(path, `${unknown}: unknown key (expected ${known.join(', ')})`);
  return {
    initContainers: listOf(raw, 'initContainers', path),
    containers: listOf(raw, 'containers', path),
    volumes: listOf(raw, 'volumes', path),
    holdApplicationLifecycle: optionalMapping(raw, 'holdApplicationLifecycle', path),
    nativeSidecarLifecycle: optionalMapping(raw, 'nativeSidecarLifecycle', path),
  };
}

function optionalMapping(raw: Mapping, key: string, path: string): Mapping | undefined {
  const value = raw[key];
  if (value !== undefined && !isMapping(value)) throw badTemplate(path, `${key}: must be a mapping`);
  return value;
}

function listOf(raw: Mapping, key: string, path: string): Mapping[] {
  const list = raw[key] ?? [];
  if (!Array.isArray(list) || !list.every((item) => isMapping(item) && typeof item['name'] === 'string')) {
    throw badTemplate(path, `${key}: must be a list of mappings with a name`);
  }
  return list as Mapping[];
}

/** Fills in every placeholder of the template for one pod. */
export function renderTemplate(template: InjectionTemplate, vars: TemplateVars, path: string): InjectionTemplate {
  const render = <T>(node: T): T => renderNode(node, vars, path) as T;
  return {
    initContainers: render(template.initContainers),
    containers: render(template.containers),
    volumes: render(template.volumes),
    holdApplicationLifecycle: render(template.holdApplicationLifecycle),
    nativeSidecarLifecycle: render(template.nativeSidecarLifecycle),
  };
}

/** Walks plain YAML data; a mapping key whose value renders to null is dropped. */
export function renderNode(node: unknown, vars: TemplateVars, path: string): unknown {
  if (typeof node === 'string') return renderString(node, vars, path);
  if (Array.isArray(node)) return node.map((item) => renderNode(item, vars, path));
  if (!isMapping(node)) return node;
  const entries = Object.entries(node).map(([key, value]) => [key, renderNode(value, vars, path)] as const);
  return Object.fromEntries(entries.filter(([, value]) => value !== null && value !== undefined));
}

function renderString(text: string, vars: TemplateVars, path: string): unknown {
  const whole = wholeValue.exec(text);
  if (whole) return lookup(whole[1] ?? '', vars, path);
  return text.replace(inlineText, (_match, name: string) => {
    const value = lookup(name, vars, path);
    if (typeof value === 'object' && value !== null) {
      throw badTemplate(path, `{{ ${name} }} is not text; use "{{ yaml ${name} }}" as the whole value`);
    }
    return String(value ?? '');
  });
}

function lookup(name: string, vars: TemplateVars, path: string): unknown {
  if (!Object.hasOwn(vars, name)) throw badTemplate(path, `{{ ${name} }}: no such value`);
  return vars[name];
}
