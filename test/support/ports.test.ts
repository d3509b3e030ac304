import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from './paths.ts';
import { canBind, ephemeralRange, ownerAlive, PortAllocator, processOwner, type PortAllocatorOptions } from './ports.ts';

async function withDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'ports-test-'));
  try {
    return await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const options = (dir: string, extra: Partial<PortAllocatorOptions> = {}): PortAllocatorOptions => ({
  dir, range: { low: 100, high: 109 }, ephemeral: { low: 105, high: 200 }, owner: 'a', ownerAlive: () => true, bindable: async () => true, ...extra,
});

/** Takes ports until the allocator refuses; bounded, so an allocator that never runs out fails here instead of looping. */
async function takeAll(allocator: PortAllocator): Promise<number[]> {
  const ports: number[] = [];
  for (let taken = 0; taken <= 1000; taken++) {
    try {
      ports.push(await allocator.take());
    } catch {
      return ports;
    }
  }
  throw new Error(`the allocator handed out more than 1000 ports and never ran out: ${ports.slice(0, 20).join(', ')}, …`);
}

describe('test ports', () => {
  it('come from outside the ephemeral range only', () => withDir(async (dir) => {
    assert.deepEqual((await takeAll(new PortAllocator(options(dir)))).sort(), [100, 101, 102, 103, 104]);
  }));

  it('held by one allocator are never handed out by another', () => withDir(async (dir) => {
    const first = await takeAll(new PortAllocator(options(dir, { owner: 'a', start: 2 })));
    const second = await takeAll(new PortAllocator(options(dir, { owner: 'b' })));
    assert.equal(first.length, 5);
    assert.deepEqual(second, []);
  }));

  it('released go back to the pool', () => withDir(async (dir) => {
    const allocator = new PortAllocator(options(dir));
    const port = await allocator.take();
    allocator.release(port);
    assert.ok(!existsSync(join(dir, String(port))));
    assert.ok((await takeAll(new PortAllocator(options(dir, { owner: 'b' })))).includes(port));
  }));

  it('locked by a process that is gone are taken over', () => withDir(async (dir) => {
    await writeFile(join(dir, '100'), 'dead');
    await writeFile(join(dir, '101'), 'alive');
    const allocator = new PortAllocator(options(dir, { owner: 'b', ownerAlive: (owner) => owner !== 'dead' }));
    assert.deepEqual((await takeAll(allocator)).sort(), [100, 102, 103, 104]);
  }));

  it('that something binds already are skipped', () => withDir(async (dir) => {
    const allocator = new PortAllocator(options(dir, { bindable: async (port) => port !== 100 }));
    assert.deepEqual((await takeAll(allocator)).sort(), [101, 102, 103, 104]);
    assert.ok(!existsSync(join(dir, '100')), 'the busy port is not kept locked');
  }));

  it('refuse a range that lies inside the ephemeral range', () => withDir(async (dir) => {
    assert.throws(() => new PortAllocator(options(dir, { range: { low: 150, high: 160 } })), /ephemeral/);
  }));

  it('are owned by pid and start time: a reused pid owns nothing', () => {
    assert.ok(ownerAlive(processOwner(process.pid)));
    assert.ok(!ownerAlive(`${process.pid}:1`));
    assert.ok(!ownerAlive('0:'));
  });

  it('know the kernel\'s ephemeral range', () => {
    const range = ephemeralRange();
    assert.ok(range.low > 1024 && range.high > range.low, JSON.stringify(range));
  });

  it('find a real bound port busy', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      assert.equal(await canBind((server.address() as { port: number }).port), false);
    } finally {
      server.close();
    }
  });

  it('handed to parallel processes never collide and are outside the ephemeral range', () => withDir(async (dir) => {
    // Each child takes 40 ports from the same lock dir, as parallel test files
    // do, and holds them (stays alive) until every child has printed its ports.
    const script = `
      import { PortAllocator, canBind, ephemeralRange, ownerAlive, processOwner } from '${repoRoot}test/support/ports.ts';
      const allocator = new PortAllocator({ dir: ${JSON.stringify(dir)}, range: { low: 20000, high: 20199 }, ephemeral: ephemeralRange(), owner: processOwner(process.pid), ownerAlive, bindable: canBind });
      const ports = [];
      for (let i = 0; i < 40; i++) ports.push(await allocator.take());
      console.log(JSON.stringify(ports));
      process.stdin.resume().on('end', () => process.exit(0));`;
    const children = [0, 1, 2].map(() => spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
    try {
      const outputs = await Promise.all(children.map((child) => new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()));
        child.once('exit', (code) => reject(new Error(`child exited ${code} before printing its ports`)));
      })));
      const ports = outputs.flatMap((text) => JSON.parse(text) as number[]);
      assert.equal(ports.length, 120);
      assert.equal(new Set(ports).size, ports.length, 'a port handed out twice');
      const ephemeral = ephemeralRange();
      assert.ok(ports.every((port) => port < ephemeral.low || port > ephemeral.high));
    } finally {
      for (const child of children) child.kill();
    }
  }));
});
