/**
 * A last-known-good file (the xDS config, the DNS name table) older than a
 * day is not trusted: its certificates and endpoints have moved on.
 */
export const lastKnownGoodMaxAgeMs = 24 * 3_600_000;

/**
 * A last-known-good file is read only when this agent's uid owns it and no
 * one else can have changed it (no group or other write): what another
 * uid left is never config.
 */
export function ownedByAgent(info: { uid: number; mode: number }): string | undefined {
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) return `is owned by uid ${info.uid}, not the agent's ${uid}`;
  if ((info.mode & 0o022) !== 0) return `is writable by group or others (mode ${(info.mode & 0o777).toString(8).padStart(4, '0')})`;
  return undefined;
}
