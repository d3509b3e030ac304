import type { InjectValues, InjectionTemplate, Mapping } from './types.ts';

export const proxyName = 'istio-proxy';

/** Kubernetes runs restartable init containers (native sidecars) from 1.29 on by default. */
const nativeSidecarSince = [1, 29] as const;

export type Placement = 'container' | 'hold-hook' | 'native-sidecar';

/** Where the proxy goes: only holdApplicationUntilProxyStarts moves it, natively when the cluster can. */
export function proxyPlacement(values: InjectValues): Placement {
  if (!values.holdApplicationUntilProxyStarts) return 'container';
  const [major = 0, minor = 0] = values.kubernetesVersion.split('.').map(Number);
  const native = major > nativeSidecarSince[0] || (major === nativeSidecarSince[0] && minor >= nativeSidecarSince[1]);
  return native ? 'native-sidecar' : 'hold-hook';
}

/** Items to add to one list of the pod spec, at its start or its end. */
export interface ListAddition {
  field: 'initContainers' | 'containers' | 'volumes';
  items: readonly Mapping[];
  atStart: boolean;
}

/**
 * The lists to add. A native sidecar follows istio-init at the head of the
 * init containers, so the app's own init containers already have the proxy;
 * the kubelet waits for its startupProbe before starting the next one. With
 * the hook, the proxy is the first container and the kubelet waits for the
 * postStart hook (`pilot-agent wait`) before starting the app.
 */
export function placeProxy(added: InjectionTemplate, placement: Placement): ListAddition[] {
  const isProxy = (container: Mapping) => container['name'] === proxyName;
  const volumes: ListAddition = { field: 'volumes', items: added.volumes, atStart: false };
  if (placement === 'native-sidecar') {
    const proxies = added.containers.filter(isProxy).map((c) => ({ ...withLifecycle(c, added.nativeSidecarLifecycle), restartPolicy: 'Always' }));
    return [
      { field: 'initContainers', items: [...added.initContainers, ...proxies], atStart: true },
      { field: 'containers', items: added.containers.filter((c) => !isProxy(c)), atStart: false },
      volumes,
    ];
  }
  const hold = placement === 'hold-hook';
  const containers = hold ? added.containers.map((c) => (isProxy(c) ? withLifecycle(c, added.holdApplicationLifecycle) : c)) : added.containers;
  return [
    { field: 'initContainers', items: added.initContainers, atStart: false },
    { field: 'containers', items: containers, atStart: hold },
    volumes,
  ];
}

function withLifecycle(container: Mapping, lifecycle: Mapping | undefined): Mapping {
  if (lifecycle === undefined) return container;
  return { ...container, lifecycle: { ...(container['lifecycle'] as Mapping | undefined), ...lifecycle } };
}
