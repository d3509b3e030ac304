import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './paths.ts';

const bundle = join(repoRoot, 'dist/bundle/pilot-agent.js');

/** Source files changed after the bundle was built (the bundle is what e2e tests run). */
export function staleSources(root = repoRoot, built = bundle): string[] {
  let builtAt: number;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    return [`${built} (missing)`];
  }
  return listFiles(join(root, 'src')).filter((file) => statSync(file).mtimeMs > builtAt);
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? listFiles(path) : [path];
  });
}

let checked = false;

/** Fails once, loudly, when an e2e test would run a bundle older than src/. */
export function assertBundleFresh(): void {
  if (checked) return;
  const stale = staleSources();
  if (stale.length > 0)
    throw new Error(
      `dist/bundle is older than ${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}: run bash scripts/build-agent.sh`,
    );
  checked = true;
}
