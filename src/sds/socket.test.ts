import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { within } from '../../test/support/within.ts';
import type { AgentError } from '../shared/errors.ts';
import { claimSdsSocket } from './socket.ts';

const exists = (path: string) => lstat(path).then(() => true, () => false);

/** A socket file nobody listens on: its process was SIGKILLed, so nothing unlinked it. */
async function staleSocket(path: string): Promise<void> {
  const child = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await within(new Promise((resolve) => child.stdout.once('data', resolve)), 10_000, 'the socket holder to listen');
  child.kill('SIGKILL');
  await within(new Promise((resolve) => child.once('exit', resolve)), 10_000, 'the SIGKILLed socket holder to exit');
}

test('claimSdsSocket: a new path is ours (its directory made), a stale socket is replaced', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sds-claim-'));
  try {
    assert.equal(await claimSdsSocket(join(dir, 'uds', 'socket')), 'ours');
    assert.ok(await exists(join(dir, 'uds')));
    await staleSocket(join(dir, 'stale'));
    assert.equal(await claimSdsSocket(join(dir, 'stale')), 'ours');
    assert.equal(await exists(join(dir, 'stale')), false, 'the leftover is removed so the server can listen');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('claimSdsSocket: a socket someone answers on is theirs; a file is bad input', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sds-claim-'));
  const server = createServer();
  try {
    await new Promise<void>((resolve) => server.listen(join(dir, 'spire'), resolve));
    assert.equal(await claimSdsSocket(join(dir, 'spire')), 'foreign');
    await writeFile(join(dir, 'file'), 'x');
    await assert.rejects(claimSdsSocket(join(dir, 'file')), /--sdsSocket: .* exists and is not a socket/);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
});

test('claimSdsSocket: a symlink, a directory or a FIFO at the path, or a parent that is a file, is bad input naming the flag', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sds-claim-'));
  const server = createServer();
  try {
    await new Promise<void>((resolve) => server.listen(join(dir, 'real'), resolve));
    await symlink(join(dir, 'real'), join(dir, 'link'));
    await mkdir(join(dir, 'dir'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    await writeFile(join(dir, 'file'), 'x');
    for (const name of ['link', 'dir', 'fifo']) {
      await assert.rejects(
        claimSdsSocket(join(dir, name)),
        (error: AgentError) => error.code === 'BAD_FLAG' && error.message === `--sdsSocket: ${join(dir, name)} exists and is not a socket`,
        name,
      );
    }
    for (const path of [join(dir, 'file', 'socket'), join(dir, 'file', 'sub', 'socket')]) {
      const message = `--sdsSocket: cannot inspect ${path} (ENOTDIR)`;
      await assert.rejects(claimSdsSocket(path), (error: AgentError) => error.code === 'BAD_FLAG' && error.message === message);
    }
    // Nothing at the path, but its directory is a dangling symlink: the directory cannot be made.
    await symlink(join(dir, 'nowhere'), join(dir, 'dangling'));
    await assert.rejects(
      claimSdsSocket(join(dir, 'dangling', 'socket')),
      (error: AgentError) => error.code === 'BAD_FLAG' && error.message === `--sdsSocket: cannot create ${join(dir, 'dangling')} (ENOENT)`,
    );
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
});
