// The previous build for bench/cost.ts: a git ref checked out into a temp
// worktree, sharing this checkout's node_modules, built the way that ref
// builds itself (scripts/build-agent.sh when it has one, else tsc).
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { nodeBin, repoRoot } from '../test/support/paths.ts';

export interface Build { label: string; bin: string; remove(): Promise<void> }

export const currentBuild = (): Build => ({ label: 'this checkout', bin: join(repoRoot, 'bin/pilot-agent.js'), remove: async () => {} });

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
    remove: async () => {
      await execa('git', ['worktree', 'remove', '--force', dir], { cwd: repoRoot });
      await rm(join(dir, '..'), { recursive: true, force: true });
    },
  };
}
