import assert from 'node:assert/strict';
import { it } from 'node:test';
import { handTimers } from '../../test/support/hand-timers.ts';
import { scrapeGateRig, settle } from '../../test/support/scrape-gate-rig.ts';
import { ScrapeGate } from './scrape-gate.ts';

const limits = { perPeer: 1, waitingPerPeer: 2, total: 8, waitMs: 5_000 };
const peer = '198.18.0.9';

const rig = () => scrapeGateRig({ ...limits, trusted: () => false }, peer);

it('a scrape that waited out its turn leaves no trace: no phantom place later, its peer still held, its waiting room free again', async () => {
  const { gate, timers, scrape } = rig();
  const running = scrape();
  const late = scrape();
  await settle();
  timers.advance(limits.waitMs);
  await settle();
  assert.deepEqual([running.verdict, late.verdict], [true, false]);
  // The peer still runs one: a new scrape of it waits, and two may wait again.
  const [second, third, refused] = [scrape(), scrape(), scrape()];
  await settle();
  assert.deepEqual([second.verdict, third.verdict, refused.verdict], [undefined, undefined, false]);
  running.close();
  await settle();
  assert.deepEqual([second.verdict, third.verdict], [true, undefined]);
  assert.equal(gate.running, 1, 'the timed-out scrape was not admitted too');
  second.close();
  await settle();
  third.close();
  await settle();
  assert.equal(gate.running, 0);
});

it('a scrape admitted after waiting, once answered, frees its waiting place only once', async () => {
  const { gate, scrape } = rig();
  const first = scrape();
  const waited = scrape();
  await settle();
  first.close();
  await settle();
  assert.equal(waited.verdict, true);
  waited.close();
  await settle();
  assert.equal(gate.running, 0);
  // Room again for one running and two waiting, and no more.
  const runs = [scrape(), scrape(), scrape(), scrape()];
  await settle();
  assert.deepEqual(runs.map((each) => each.verdict), [true, undefined, undefined, false]);
  for (const each of runs) each.close();
  await settle();
});

it("a waiting scrape that gives up takes only its own place in the line: another peer's waiter is still admitted", async () => {
  const timers = handTimers();
  const gate = new ScrapeGate({ ...limits, trusted: () => false, timers: timers.host });
  const scrape = (from: string) => {
    const answer = new AbortController();
    const entry = { verdict: undefined as boolean | undefined, close: () => answer.abort() };
    void gate.enter(from, answer.signal).then((verdict) => (entry.verdict = verdict));
    return entry;
  };
  const [a, b, c, d] = [scrape(peer), scrape(peer), scrape('198.18.0.10'), scrape('198.18.0.10')];
  await settle();
  b.close();
  await settle();
  assert.equal(b.verdict, false);
  c.close();
  await settle();
  assert.equal(d.verdict, true);
  a.close();
  d.close();
  await settle();
  assert.equal(gate.running, 0);
});
