import assert from 'node:assert/strict';
import { closeSync, fstatSync, openSync, readdirSync, readlinkSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { execa } from 'execa';
import { pino } from 'pino';
import { tempDir } from '../../test/support/cleanup.ts';
import { waitUntil } from '../../test/support/poll.ts';
import { within } from '../../test/support/within.ts';
import { StderrFifos } from './stderr-fifo.ts';

function capture() {
  const logged: { level: number; msg: string; err?: { message?: string } }[] = [];
  return { logged, logger: pino({ level: 'info' }, { write: (text: string) => void logged.push(JSON.parse(text)) }) };
}

it("a child's fd 2 is a FIFO: it can open /dev/stderr by path, both writes reach the lines, which end with the child; no name is left", async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'stderr-fifo-');
  const { logged, logger } = capture();
  const fifo = await new StderrFifos(dir, logger).open(3);
  assert.ok(fifo, JSON.stringify(logged));
  let ended = false;
  endReaderOnFailure(cleanup, fifo.writeFd, () => ended);
  const child = execa('sh', ['-c', 'echo on-fd-2 >&2; echo by-path >> /dev/stderr'], { stdin: 'ignore', stdout: 'ignore', stderr: fifo.writeFd as 3, reject: false });
  fifo.release();
  const lines: string[] = [];
  await within((async () => { for await (const line of fifo.lines) lines.push(line); })(), 10_000, 'the lines to end with the child');
  ended = true;
  assert.equal((await child).exitCode, 0);
  assert.deepEqual(lines, ['on-fd-2', 'by-path']);
  assert.deepEqual(await readdir(dir), []);
  assert.deepEqual(logged, []);
});

it('where no FIFO can be made, none is tried again: Envoy keeps a piped stderr, and one warning says what /dev/stderr then cannot do', async () => {
  const { logged, logger } = capture();
  const fifos = new StderrFifos(join('/nonexistent', 'dir'), logger);
  assert.equal(await fifos.open(0), undefined);
  assert.equal(await fifos.open(1), undefined);
  assert.deepEqual(logged.map((line) => [line.level, line.msg]), [[40, "no FIFO for Envoy's stderr: it is a socket, so an access log to /dev/stderr cannot open"]]);
  assert.match(String(logged[0]?.err?.message), /mkfifo/, 'the warning carries the error that made it');
});

it('an epoch never spawned: close gives back the write end it would have handed to Envoy', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'stderr-fifo-');
  const { logged, logger } = capture();
  const fifo = await new StderrFifos(dir, logger).open(0);
  assert.ok(fifo, JSON.stringify(logged));
  assert.ok(isOpen(fifo.writeFd));
  let closed = false;
  endReaderOnFailure(cleanup, fifo.writeFd, () => closed);
  fifo.close();
  await waitUntil('the write end to be closed', () => !isOpen(fifo.writeFd), 10_000);
  closed = true;
  assert.deepEqual(await readdir(dir), []);
});

it('close after release closes the write end once: a file that took its number since stays open', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'stderr-fifo-');
  const { logged, logger } = capture();
  const fifo = await new StderrFifos(dir, logger).open(0);
  assert.ok(fifo, JSON.stringify(logged));
  const pipe = readlinkSync(`/proc/self/fd/${fifo.writeFd}`);
  fifo.release();
  await waitUntil('the write end to be closed', () => !isOpen(fifo.writeFd), 10_000);
  // A new descriptor takes the lowest free number: the one the write end had.
  const other = openSync(join(dir, 'other'), 'w');
  cleanup.defer(() => (isOpen(other) ? closeSync(other) : undefined));
  assert.equal(other, fifo.writeFd, 'the file has the number the write end had');
  fifo.close();
  // close() closes the write end (if it were to) before it destroys the reader: once the read end is gone, that is done.
  await waitUntil('the read end to be closed', () => !readdirSync('/proc/self/fd').some((fd) => linkOf(fd) === pipe), 10_000);
  assert.ok(isOpen(other), 'the file that took the number is still open');
});

function linkOf(fd: string): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

/**
 * When a test fails before the write end was closed (a broken `release` or
 * `close`), closes it itself: the reader then reads to its end and lets go of
 * its socket, so the test's process ends instead of hanging. Only a FIFO: the
 * number is ours while it still names one.
 */
function endReaderOnFailure(cleanup: AsyncDisposableStack, writeFd: number, done: () => boolean): void {
  cleanup.defer(() => {
    if (done()) return;
    try {
      if (fstatSync(writeFd).isFIFO()) closeSync(writeFd);
    } catch {
      // Closed already.
    }
  });
}
