/** The desired config as log lines and exit reasons name it: its hash's first 12 hex digits. */
export const shortHash = (hash: string) => hash.slice(0, 12);
