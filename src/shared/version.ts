import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** The version in package.json, read once. */
export function agentVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
    .version;
  return cached;
}
