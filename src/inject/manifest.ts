import { isCollection, isSeq, parseAllDocuments, type Document } from 'yaml';
import { badFile } from '../shared/errors.ts';
import { blame } from './blame.ts';
import { locatePodTemplate } from './pod.ts';
import { buildPodPatch, decideInjection, type PodPatch } from './sidecar.ts';
import { isMapping, type InjectionInputs, type Mapping } from './types.ts';
import { firstLine } from './yaml.ts';

export interface InjectManifestOptions extends InjectionInputs {
  /** The input's name for error lines: a path, or "stdin". */
  source: string;
}

/**
 * Injects the sidecar into every workload of a multi-document manifest and
 * returns the whole manifest. Other documents, and workloads that are
 * injected already or opted out, come back as they were (comments kept).
 * Throws on the first bad document, so nothing partial is ever returned.
 */
export function injectManifest(text: string, options: InjectManifestOptions): string {
  const docs = parseAllDocuments(text);
  // Each document's own slice of the input, so untouched ones come back byte for byte.
  const starts = docs.map((doc, index) => (index === 0 ? 0 : doc.range[0]));
  const sources = starts.map((start, index) => text.slice(start, starts[index + 1] ?? text.length));
  return docs.map((doc, index) => injectDocument(doc, index + 1, sources[index] ?? '', options)).join('');
}

/** The document's text, with the sidecar when it is a workload to inject. */
function injectDocument(doc: Document, number: number, source: string, options: InjectManifestOptions): string {
  const [error] = doc.errors;
  if (error !== undefined) throw badFile(options.source, `document ${number}: not valid YAML: ${firstLine(error.message)}`);
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) return source;
  const { kind, label } = describeDocument(data, number, options.source);
  const pod = blame(options.source, label, () => locatePodTemplate(data as Mapping, kind));
  if (pod === undefined || decideInjection(pod, metadataOf(data)) !== 'inject') return source;
  applyPatch(doc, pod.path, blame(options.source, label, () => buildPodPatch(pod, options, workloadName(data))));
  // Every document after the first starts with its own marker, so joining is plain concatenation.
  if (number > 1 && doc.directives !== undefined) doc.directives.docStart = true;
  return doc.toString();
}

/** Edits the YAML tree in place, so comments and styles elsewhere survive. */
function applyPatch(doc: Document, podPath: readonly Key[], patch: PodPatch): void {
  applyAnnotations(doc, [...podPath, 'metadata', 'annotations'], patch.annotations);
  for (const { index, probes } of patch.probeRewrites) {
    const container = [...podPath, 'spec', 'containers', index];
    for (const [field, probe] of Object.entries(probes)) doc.setIn([...container, field], doc.createNode(probe));
    useBlockStyle(doc, container);
  }
  for (const { field, items, atStart } of patch.lists) addToList(doc, [...podPath, 'spec', field], items, atStart);
}

type Key = string | number;

/** null removes an annotation (the prometheus.io/* variants Istio clears). */
function applyAnnotations(doc: Document, path: readonly Key[], annotations: PodPatch['annotations']): void {
  for (const [key, value] of Object.entries(annotations)) {
    if (value === null) doc.deleteIn([...path, key]);
    else doc.setIn([...path, key], value);
  }
  useBlockStyle(doc, path);
}

function addToList(doc: Document, path: readonly Key[], items: readonly Mapping[], atStart: boolean): void {
  useBlockStyle(doc, path);
  const list = doc.getIn(path, true);
  if (!isSeq(list)) {
    doc.setIn(path, doc.createNode(items));
    return;
  }
  const nodes = items.map((item) => doc.createNode(item));
  if (atStart) list.items.unshift(...nodes);
  else list.items.push(...nodes);
}

/** A flow collection we add big entries to would print as one unreadable line. */
function useBlockStyle(doc: Document, path: readonly Key[]): void {
  for (let depth = 1; depth <= path.length; depth++) {
    const node = doc.getIn(path.slice(0, depth), true);
    if (isCollection(node)) node.flow = false;
  }
}

function describeDocument(data: unknown, number: number, source: string): { kind: string; label: string } {
  if (!isMapping(data)) throw badFile(source, `document ${number}: not a Kubernetes object (expected a mapping with kind)`);
  const kind = data['kind'];
  if (typeof kind !== 'string' || kind === '') throw badFile(source, `document ${number}: kind: missing`);
  const name = workloadName(data);
  return { kind, label: `document ${number} (${kind}${name === '' ? '' : `/${name}`})` };
}

const metadataOf = (data: unknown): Mapping => (isMapping(data) && isMapping(data['metadata']) ? data['metadata'] : {});

function workloadName(data: unknown): string {
  const name = metadataOf(data)['name'];
  return typeof name === 'string' ? name : '';
}
