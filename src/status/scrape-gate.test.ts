import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scrapeGateRig, settle } from '../../test/support/scrape-gate-rig.ts';
import { scrapeLimits } from './scrape-gate.ts';

const limits = { perPeer: 1, waitingPerPeer: 2, total: 3, waitMs: 5_000 };

const rig = (overrides: Partial<typeof limits> = {}) => scrapeGateRig({ ...limits, ...overrides, trusted: (peer) => peer === '127.0.0.1' });

describe('ScrapeGate: how many scrapes are made at once', () => {
  it('ships limits that serve one scrape at a time from each peer, a few at once in all', () => {
    assert.equal(scrapeLimits.perPeer, 1);
    assert.ok(scrapeLimits.total >= 4 && scrapeLimits.total <= 16, `total ${scrapeLimits.total}`);
    assert.ok(scrapeLimits.waitMs < 10_000, 'a waiting scrape gives up before the send timeout frees anything');
  });

  it('serves a peer that scrapes one at a time, every time, however many scrapes of others are stuck', async () => {
    const { gate, scrape } = rig();
    const stuck = [scrape('198.18.0.66'), scrape('198.18.0.67')];
    for (let round = 0; round < 5; round++) {
      const prometheus = scrape('198.18.0.9');
      await settle();
      assert.equal(prometheus.verdict, true, `round ${round}`);
      prometheus.close();
    }
    await settle();
    assert.deepEqual(stuck.map((each) => each.verdict), [true, true]);
    assert.equal(gate.running, 2, 'the closed answers gave their places back');
  });

  it('makes one scrape at a time for a peer that asks on many connections: two wait, the rest are refused at once', async () => {
    const { gate, scrape } = rig();
    const attack = Array.from({ length: 6 }, () => scrape('198.18.0.66'));
    await settle();
    assert.deepEqual(attack.map((each) => each.verdict), [true, undefined, undefined, false, false, false]);
    assert.equal(gate.running, 1);
    attack[0]!.close();
    await settle();
    assert.deepEqual(attack.slice(1, 3).map((each) => each.verdict), [true, undefined], 'the first waiting takes its turn, in order');
    assert.equal(gate.running, 1);
  });

  it('refuses a waiting scrape once it has waited waitMs, and one whose client left, and forgets the peer', async () => {
    const { gate, timers, scrape } = rig();
    const first = scrape('198.18.0.66');
    const [late, gone] = [scrape('198.18.0.66'), scrape('198.18.0.66')];
    gone.close();
    await settle();
    assert.equal(gone.verdict, false, 'the client left while waiting');
    timers.advance(limits.waitMs - 1);
    await settle();
    assert.equal(late.verdict, undefined, 'not before waitMs');
    timers.advance(1);
    await settle();
    assert.equal(late.verdict, false);
    assert.deepEqual(timers.delays(), [], 'no timer left behind');
    first.close();
    const again = scrape('198.18.0.66');
    await settle();
    assert.equal(again.verdict, true, 'the peer starts afresh');
    again.close();
    assert.equal(gate.running, 0);
  });

  it('bounds every peer together: past total a new peer waits for a place, and gets the next one', async () => {
    const { gate, scrape } = rig();
    const held = ['198.18.0.1', '198.18.0.2', '198.18.0.3'].map(scrape);
    const fourth = scrape('198.18.0.4');
    await settle();
    assert.equal(fourth.verdict, undefined);
    held[1]!.close();
    await settle();
    assert.equal(fourth.verdict, true);
    assert.equal(gate.running, 3);
  });

  it('holds loopback peers (the pod\'s own containers) by the total only', async () => {
    const { gate, scrape } = rig();
    const local = [scrape('127.0.0.1'), scrape('127.0.0.1'), scrape('127.0.0.1')];
    await settle();
    assert.deepEqual(local.map((each) => each.verdict), [true, true, true]);
    assert.equal(gate.running, 3);
  });

  it('never admits a scrape whose client left before it asked', async () => {
    const { gate } = rig();
    const gone = new AbortController();
    gone.abort();
    assert.equal(await gate.enter('198.18.0.9', gone.signal), false);
    assert.equal(gate.running, 0);
  });
});
