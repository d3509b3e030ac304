import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LiveDetails } from '../agent/proxy.ts';
import { FakeClock } from '../shared/clock.ts';
import type { AdminClient, AdminResult, ServerInfo } from './admin.ts';
import { isThisEpochLive, livePollMs, waitingNoticeMs, watchLive } from './live.ts';

const rev = (epoch: number) => `/etc/istio/proxy/envoy-rev${epoch}.json`;

/** What holds the admin port at one poll: its /ready status and its /server_info. */
interface Answer { ready: number; state: string; epoch: number }

/** An admin port whose holder changes with each poll (the last answer stays); records each path asked. */
function scriptedAdmin(answers: Answer[], asked: string[]): AdminClient {
  let poll = -1;
  const get = async (path: string): Promise<AdminResult> => {
    asked.push(path);
    if (path === '/ready') poll++;
    const answer = answers[Math.min(poll, answers.length - 1)]!;
    if (path === '/ready') return { ok: true, status: answer.ready, body: answer.state };
    return {
      ok: true,
      status: 200,
      body: JSON.stringify({
        state: answer.state,
        version: `v-epoch-${answer.epoch}`,
        command_line_options: { restart_epoch: answer.epoch, config_path: rev(answer.epoch) },
      }),
    };
  };
  return { get, post: get };
}

/** Runs watchLive for `bootstrapPath` over the answers, advancing the fake clock one poll at a time. */
async function watch(answers: Answer[], bootstrapPath: string, polls: number): Promise<{ live: LiveDetails[]; asked: string[] }> {
  const clock = new FakeClock();
  const stop = new AbortController();
  const live: LiveDetails[] = [];
  const asked: string[] = [];
  const done = watchLive({ admin: scriptedAdmin(answers, asked), clock, bootstrapPath, signal: stop.signal, onLive: (details) => live.push(details) });
  for (let i = 0; i < polls; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(livePollMs);
  }
  stop.abort();
  await done;
  return { live, asked };
}

const old: Answer = { ready: 200, state: 'LIVE', epoch: 0 };
const starting: Answer = { ready: 503, state: 'INITIALIZING', epoch: 1 };
const liveNew: Answer = { ready: 200, state: 'LIVE', epoch: 1 };

test('hot restart: the old epoch answering LIVE on the shared admin port does not count as the new epoch\'s LIVE', async () => {
  const { live } = await watch([old], rev(1), 10);
  assert.deepEqual(live, [], 'epoch 0\'s LIVE is not epoch 1\'s');
});

test('hot restart: old epoch LIVE, then the new one initializing, then the new one LIVE: LIVE counts once, from the new epoch', async () => {
  const { live, asked } = await watch([old, old, starting, starting, liveNew], rev(1), 10);
  assert.deepEqual(live, [{ envoyVersion: 'v-epoch-1' }]);
  assert.equal(asked.filter((path) => path === '/server_info').length, 3, '/server_info asked only when /ready said LIVE: twice the old epoch, once the new');
});

test('another agent\'s Envoy LIVE on the port, at the same epoch number, does not count', async () => {
  const { live } = await watch([{ ready: 200, state: 'LIVE', epoch: 0 }], '/other/agent/envoy-rev0.json', 5);
  assert.deepEqual(live, []);
});

test('isThisEpochLive: LIVE and this epoch\'s own bootstrap, nothing less', () => {
  const info = (state: ServerInfo['state'], configPath: string): ServerInfo => ({ state, epoch: 1, configPath, version: 'v' });
  const cases: { name: string; info: ServerInfo | undefined; want: boolean }[] = [
    { name: 'this epoch, LIVE', info: info('LIVE', rev(1)), want: true },
    { name: 'this epoch, still initializing', info: info('INITIALIZING', rev(1)), want: false },
    { name: 'this epoch, draining', info: info('DRAINING', rev(1)), want: false },
    { name: 'the old epoch, LIVE', info: info('LIVE', rev(0)), want: false },
    { name: 'admin not up', info: undefined, want: false },
  ];
  for (const { name, info: answer, want } of cases) assert.equal(isThisEpochLive(answer, rev(1)), want, name);
});

test('stopped while /server_info was being asked: no LIVE is told, even if the answer says LIVE', async () => {
  const stop = new AbortController();
  const live: LiveDetails[] = [];
  const answer = {
    ok: true as const,
    status: 200,
    body: JSON.stringify({ state: 'LIVE', version: 'v', command_line_options: { restart_epoch: 1, config_path: rev(1) } }),
  };
  const admin: AdminClient = { get: async (path) => (path === '/server_info' && stop.abort(), answer), post: async () => answer };
  await watchLive({ admin, clock: new FakeClock(), bootstrapPath: rev(1), signal: stop.signal, onLive: (details) => live.push(details) });
  assert.deepEqual(live, []);
});

test('an epoch still not LIVE after 30 s is told once (it waits for its config); one LIVE before is never', async () => {
  // The clock starts where it is told (an agent up for a while), not at 0: the wait is counted from the watch's start.
  const run = async (answers: Answer[], polls: number, start = 0) => {
    const clock = new FakeClock(start);
    const stop = new AbortController();
    const waited: number[] = [];
    const admin = scriptedAdmin(answers, []);
    const done = watchLive({ admin, clock, bootstrapPath: rev(1), signal: stop.signal, onLive: () => undefined, onWaiting: (ms) => waited.push(ms) });
    for (let i = 0; i < polls; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(livePollMs);
    }
    stop.abort();
    await done;
    return waited;
  };
  const polls = waitingNoticeMs / livePollMs;
  assert.deepEqual(await run([starting], polls - 1), [], 'not before 30 s');
  assert.deepEqual(await run([starting], polls + 50), [waitingNoticeMs]);
  assert.deepEqual(await run([starting, liveNew], polls + 50), []);
  const since = 5_000_000;
  assert.deepEqual(await run([starting], polls - 1, since), [], 'not before 30 s of this watch, whatever the clock read at its start');
  assert.deepEqual(await run([starting], polls + 50, since), [waitingNoticeMs]);
});

test('an epoch LIVE past 30 s without an onWaiting hook still reports LIVE (the notice is optional)', async () => {
  const polls = waitingNoticeMs / livePollMs;
  const live: LiveDetails[] = [];
  const answers = [...Array.from({ length: polls + 10 }, () => starting), liveNew];
  const clock = new FakeClock();
  const stop = new AbortController();
  const done = watchLive({ admin: scriptedAdmin(answers, []), clock, bootstrapPath: rev(1), signal: stop.signal, onLive: (details) => live.push(details) });
  for (let i = 0; i < polls + 50; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(livePollMs);
  }
  stop.abort();
  await done;
  assert.deepEqual(live, [{ envoyVersion: 'v-epoch-1' }]);
});
