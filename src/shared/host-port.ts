/** A host and port, parsed from a `host:port` flag. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * Parses `host:port` (IPv6 as `[::1]:15010`). Returns an error text instead
 * of throwing so the caller can name the flag it came from.
 */
export function parseHostPort(text: string): HostPort | string {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d+)$/.exec(text.trim());
  if (!match) return `"${text}" is not host:port`;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return `port ${match[3]} is out of range (1-65535)`;
  return { host: match[1] ?? match[2]!, port };
}

/** Formats a host and port back, bracketing IPv6. */
export function formatHostPort({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
