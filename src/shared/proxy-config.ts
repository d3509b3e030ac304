/** A host and port, parsed from a `host:port` flag. */
export interface HostPort {
  host: string;
  port: number;
}

/** Everything `pilot-agent proxy` was told: derived from the rows of src/settings/proxy-settings.ts. */
export type { ProxyConfig } from '../settings/proxy-settings.ts';
