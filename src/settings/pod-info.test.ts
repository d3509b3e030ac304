import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { maxPodInfoBytes, readPodInfo } from './pod-info.ts';

const dir = await mkdtemp(join(tmpdir(), 'pod-info-'));
after(() => rm(dir, { recursive: true, force: true }));

test('pod info: both files read, a missing one is "not mounted", a bad one is exit 2 naming the file', async () => {
  const pod = join(dir, 'pod');
  await mkdir(pod);
  await writeFile(join(pod, 'labels'), 'app="a"\n');
  await writeFile(join(pod, 'annotations'), 'k="v"\n');
  assert.deepEqual(await readPodInfo(pod), { labels: { app: 'a' }, annotations: { k: 'v' } });
  assert.deepEqual(await readPodInfo(join(dir, 'missing')), { labels: undefined, annotations: undefined });
  const bad = join(dir, 'bad');
  await mkdir(join(bad, 'labels'), { recursive: true });
  await writeFile(join(bad, 'annotations'), 'k=v\n');
  const named = (message: string) => (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message;
  await assert.rejects(readPodInfo(bad), named(`${join(bad, 'labels')}: is not a regular file (a directory)`));
  await mkdir(join(dir, 'bad2'));
  await writeFile(join(dir, 'bad2', 'annotations'), 'x\nk=v\n');
  await assert.rejects(
    readPodInfo(join(dir, 'bad2')),
    named(`${join(dir, 'bad2', 'annotations')}: line 2: value is not a double-quoted string (Kubernetes downward-API format, key="value")`),
  );
  await writeFile(join(dir, 'file'), '');
  await assert.rejects(readPodInfo(join(dir, 'file')), named(`${join(dir, 'file', 'labels')}: cannot read pod info (ENOTDIR)`));
});

test('pod info: an annotations file over its cap is exit 2 naming it, unparsed', async () => {
  const big = join(dir, 'big');
  await mkdir(big);
  await writeFile(join(big, 'annotations'), `proxy.istio.io/config="${'x'.repeat(maxPodInfoBytes)}"\n`);
  await assert.rejects(readPodInfo(big), (error: unknown) => {
    assert.ok(error instanceof AgentError && error.exitCode === 2);
    assert.match(error.message, new RegExp(`^${join(big, 'annotations')}: is \\d+ bytes, more than the 1048576 allowed$`));
    return true;
  });
});
