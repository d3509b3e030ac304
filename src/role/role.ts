import { isIP } from 'node:net';
import type { PodEnv } from '../settings/pod-env.ts';
import type { ProxyType } from '../settings/proxy-type.ts';
import { badEnv, badFlag } from '../shared/errors.ts';


export const registries = ['Kubernetes', 'Consul', 'Other'] as const;
export type Registry = (typeof registries)[number];

/** Who this proxy is: the four parts of Envoy's service node id. */
export interface Role {
  type: ProxyType;
  ip: string;
  id: string;
  domain: string;
}

export interface RoleInput {
  type: ProxyType;
  registry: Registry;
  /** Values of --ip, --id, --domain; empty means "derive". */
  ip: string;
  id: string;
  domain: string;
  /** The Kubernetes registry's env (INSTANCE_IP, POD_NAME, POD_NAMESPACE), as set. */
  pod: PodEnv;
  /** Finds this host's private IP (bounded wait); resolves undefined when none. */
  findPrivateIp: () => Promise<string | undefined>;
}

/**
 * The node type the discovery server knows: istiod accepts sidecar, router,
 * waypoint and ztunnel, so an ingress introduces itself as the router it is.
 */
export function nodeType(type: ProxyType): 'sidecar' | 'router' | 'waypoint' {
  return type === 'ingress' ? 'router' : type;
}

/** The service node id Envoy and the discovery server know us by. */
export function serviceNode(role: Role): string {
  return [nodeType(role.type), role.ip, role.id, role.domain].join('~');
}

/**
 * Derives the role: flags win, then the registry's env vars (Kubernetes) or
 * the host's private IP (Consul, Other), as Istio's agent does.
 */
export async function resolveRole(input: RoleInput): Promise<Role> {
  const ip = input.ip ? checkIp('--ip', input.ip) : await deriveIp(input);
  const id = input.id || deriveId(input, ip);
  const domain = input.domain || deriveDomain(input);
  for (const [name, value] of [['--id', id], ['--domain', domain]] as const) {
    if (value.includes('~')) throw badFlag(name, `"${value}" must not contain "~", the service node separator`);
  }
  return { type: input.type, ip, id, domain };
}

async function deriveIp(input: RoleInput): Promise<string> {
  const fromEnv = input.registry === 'Kubernetes' ? input.pod.ip : undefined;
  if (fromEnv) return checkIp('INSTANCE_IP', fromEnv, true);
  // Without INSTANCE_IP a Kubernetes pod falls back to its interfaces too.
  return (await input.findPrivateIp()) ?? '127.0.0.1';
}

function deriveId(input: RoleInput, ip: string): string {
  switch (input.registry) {
    case 'Kubernetes':
      return `${requireEnv('POD_NAME', input.pod.name)}.${requireEnv('POD_NAMESPACE', input.pod.namespace)}`;
    case 'Consul':
      return `${ip}.service.consul`;
    case 'Other':
      return ip;
  }
}

function deriveDomain(input: RoleInput): string {
  switch (input.registry) {
    case 'Kubernetes':
      return `${requireEnv('POD_NAMESPACE', input.pod.namespace)}.svc.cluster.local`;
    case 'Consul':
      return 'service.consul';
    case 'Other':
      return '';
  }
}

function requireEnv(name: string, value: string | undefined): string {
  if (!value) throw badEnv(name, 'is not set; the Kubernetes registry needs it unless --id and --domain are given');
  return value;
}

function checkIp(name: string, value: string, fromEnv = false): string {
  if (isIP(value)) return value;
  const reason = `"${value}" is not an IP address`;
  throw fromEnv ? badEnv(name, reason) : badFlag(name, reason);
}
