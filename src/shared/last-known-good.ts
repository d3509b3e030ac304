/**
 * A last-known-good file (the xDS config, the DNS name table) older than a
 * day is not trusted: its certificates and endpoints have moved on.
 */
export const lastKnownGoodMaxAgeMs = 24 * 3_600_000;
