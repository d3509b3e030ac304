/** The proxy types `pilot-agent proxy [type]` runs as. */
export const proxyTypes = ['sidecar', 'router', 'ingress', 'waypoint'] as const;
export type ProxyType = (typeof proxyTypes)[number];
