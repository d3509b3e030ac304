// The previous build for bench/cost.ts: a git ref checked out into a temp
// worktree, sharing this checkout's node_modules, built the way that ref
// builds itself (scripts/build-agent.sh when it has one, else tsc).
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { nodeBin, repoRoot } from '../test/support/paths.ts';

/**
 * How a bench starts a build: through its entry point's shebang, as the image
 * does (`viaShebang`, the flags it ships with), or as `node <nodeArgs> bin`
 * with `env` over the pod's (a variant: flags measured before shipping them).
 */
export interface Build { label: string; bin: string; remove(): Promise<void>; viaShebang?: boolean; nodeArgs?: string[]; env?: Record<string, string> }

export const currentBuild = (): Build => ({ label: 'this checkout', bin: join(repoRoot, 'bin/pilot-agent.js'), viaShebang: true, remove: async () => {} });

/**
 * --variant 'LABEL: --node-flag NAME=VALUE ...': this checkout run by `node
 * --disable-sigusr1` and those flags and variables, its shebang not read.
 * 'none:' alone is the checkout with no flag at all, the menu's baseline.
 */
export function variantBuild(spec: string): Build {
  const colon = spec.indexOf(':');
  if (colon < 1) throw new Error(`--variant ${spec}: expected 'LABEL: --flag NAME=VALUE ...'`);
  const words = spec.slice(colon + 1).split(/\s+/).filter(Boolean);
  const env = Object.fromEntries(words.filter((w) => !w.startsWith('--')).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
  const nodeArgs = ['--disable-sigusr1', ...words.filter((w) => w.startsWith('--'))];
  return { label: spec.slice(0, colon), bin: join(repoRoot, 'bin/pilot-agent.js'), nodeArgs, env, remove: async () => {} };
}

export async function buildRef(ref: string): Promise<Build> {
  const parent = await mkdtemp(join(tmpdir(), 'cost-build-'));
  await chmod(parent, 0o755); // a pod's agent runs it as uid 1337 (bench/pod-start.ts)
  const dir = join(parent, 'tree');
  const commit = (await execa('git', ['rev-parse', '--short', ref], { cwd: repoRoot })).stdout;
  await execa('git', ['worktree', 'add', '--detach', dir, commit], { cwd: repoRoot });
  await symlink(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  await symlink(join(repoRoot, '.tools'), join(dir, '.tools'));
  if (existsSync(join(dir, 'scripts/build-agent.sh'))) await execa('bash', ['scripts/build-agent.sh'], { cwd: dir });
  else await execa(nodeBin, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { cwd: dir });
  return {
    label: `${ref} @${commit}`,
    bin: join(dir, 'bin/pilot-agent.js'),
    viaShebang: true,
    remove: async () => {
      await execa('git', ['worktree', 'remove', '--force', dir], { cwd: repoRoot });
      await rm(join(dir, '..'), { recursive: true, force: true });
    },
  };
}
