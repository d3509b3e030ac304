import { badFlag } from '../shared/errors.ts';
import { isMapping, type Mapping, type PodTemplate } from './types.ts';

/** Where each kind keeps the object with its pods' metadata and spec. */
const podPaths: Readonly<Record<string, readonly string[]>> = {
  Pod: [],
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  ReplicationController: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

/** The kinds `pilot-agent inject` changes; every other kind passes through. */
export const injectableKinds = Object.keys(podPaths);

/**
 * Finds the pod template of a workload document. Undefined for kinds that
 * carry no pods (Service, ConfigMap…). A known kind with a malformed pod
 * template, or an unknown kind that has a spec.template, is a usage error:
 * passing either through would silently ship a pod without its proxy.
 */
export function locatePodTemplate(doc: Mapping, kind: string): PodTemplate | undefined {
  const path = podPaths[kind];
  if (path === undefined) {
    if (isMapping(doc['spec']) && doc['spec']['template'] !== undefined) {
      throw badFlag('kind', `"${kind}" has a spec.template but is not a kind that can be injected (${injectableKinds.join(', ')})`);
    }
    return undefined;
  }
  const holder = path.length === 0 ? doc : dig(doc, path);
  const where = path.join('.');
  if (!isMapping(holder)) throw badFlag(where, 'must be a mapping with the pod metadata and spec');
  return { path, metadata: checkMetadata(holder['metadata'], prefix(where, 'metadata')), spec: checkPodSpec(holder['spec'], prefix(where, 'spec')) };
}

const prefix = (where: string, key: string) => (where === '' ? key : `${where}.${key}`);

function dig(doc: Mapping, path: readonly string[]): unknown {
  let node: unknown = doc;
  for (const key of path) node = isMapping(node) ? node[key] : undefined;
  return node;
}

function checkMetadata(metadata: unknown, where: string): Mapping {
  if (metadata === undefined || metadata === null) return {};
  if (!isMapping(metadata)) throw badFlag(where, 'must be a mapping');
  for (const key of ['labels', 'annotations']) {
    const map = metadata[key];
    if (map === undefined || map === null) continue;
    if (!isMapping(map) || !Object.values(map).every((value) => typeof value === 'string')) {
      throw badFlag(`${where}.${key}`, 'must be a mapping of strings');
    }
  }
  return metadata;
}

function checkPodSpec(spec: unknown, where: string): Mapping {
  if (!isMapping(spec)) throw badFlag(where, 'must be a mapping');
  checkNamedList(spec, 'containers', where, true);
  checkNamedList(spec, 'initContainers', where, false);
  checkNamedList(spec, 'volumes', where, false);
  return spec;
}

function checkNamedList(spec: Mapping, key: string, where: string, required: boolean): void {
  const list = spec[key];
  if (!required && (list === undefined || list === null)) return;
  if (!Array.isArray(list) || (required && list.length === 0)) {
    throw badFlag(`${where}.${key}`, required ? 'must be a non-empty list' : 'must be a list');
  }
  list.forEach((item, index) => {
    if (!isMapping(item) || typeof item['name'] !== 'string') throw badFlag(`${where}.${key}[${index}]`, 'must be a mapping with a name');
  });
}
