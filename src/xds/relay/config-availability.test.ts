import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LastKnownGoodConfig } from '../last-known-good/config.ts';
import { ConfigAvailability } from './config-availability.ts';

const clusters = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const listeners = 'type.googleapis.com/envoy.config.listener.v3.Listener';

/** What happens, in order: a dial's outcome, Envoy asking for a type, a type kept, a type forgotten. */
type Step = ['dialed', boolean] | ['asked' | 'kept' | 'forgotten', 'sotw' | 'delta', string];

function play(steps: Step[]) {
  const lastKnownGood = new LastKnownGoodConfig();
  const availability = new ConfigAvailability(lastKnownGood);
  const told: boolean[] = [];
  availability.onChange((available) => told.push(available));
  for (const [what, a, b] of steps) {
    if (what === 'dialed') availability.dialed(a);
    else if (what === 'asked') lastKnownGood.subscribe(a, b!, []);
    else if (what === 'forgotten') lastKnownGood.forget(a, b!);
    else if (a === 'sotw') lastKnownGood.keepSotw(b!, 'v1', [Buffer.from('r')], 0);
    else lastKnownGood.applyDelta(b!, { version: 'v1', resources: [], removed: [], reset: true }, 0);
  }
  return { available: availability.available, lastDialFailed: availability.lastDialFailed, told };
}

const rows: { name: string; steps: Step[]; available: boolean; lastDialFailed: boolean; told: boolean[] }[] = [
  { name: 'nothing dialled yet', steps: [], available: true, lastDialFailed: false, told: [] },
  {
    name: 'the first dials fail, the server never reached: no Envoy got config through the relay, so a new one loses nothing',
    steps: [
      ['dialed', false],
      ['dialed', false],
    ],
    available: true,
    lastDialFailed: true,
    told: [],
  },
  { name: 'the server reached', steps: [['dialed', true]], available: true, lastDialFailed: false, told: [] },
  {
    name: 'reached, then the last dial failed with nothing kept',
    steps: [
      ['dialed', true],
      ['dialed', false],
    ],
    available: false,
    lastDialFailed: true,
    told: [false],
  },
  {
    name: 'reached, failed, reached again',
    steps: [
      ['dialed', true],
      ['dialed', false],
      ['dialed', true],
    ],
    available: true,
    lastDialFailed: false,
    told: [false, true],
  },
  {
    name: 'failed with every asked SotW type kept',
    steps: [
      ['dialed', true],
      ['asked', 'sotw', clusters],
      ['kept', 'sotw', clusters],
      ['dialed', false],
    ],
    available: true,
    lastDialFailed: true,
    told: [],
  },
  {
    name: 'failed with every asked Delta type kept',
    steps: [
      ['dialed', true],
      ['asked', 'delta', clusters],
      ['kept', 'delta', clusters],
      ['dialed', false],
    ],
    available: true,
    lastDialFailed: true,
    told: [],
  },
  {
    name: 'failed with only some asked types kept',
    steps: [
      ['dialed', true],
      ['asked', 'sotw', clusters],
      ['asked', 'sotw', listeners],
      ['kept', 'sotw', clusters],
      ['dialed', false],
    ],
    available: false,
    lastDialFailed: true,
    told: [false],
  },
  {
    name: 'failed, then the missing type kept',
    steps: [
      ['dialed', true],
      ['asked', 'sotw', clusters],
      ['dialed', false],
      ['kept', 'sotw', clusters],
    ],
    available: true,
    lastDialFailed: true,
    told: [false, true],
  },
  {
    name: 'failed, covered, then the kept type forgotten',
    steps: [
      ['dialed', true],
      ['kept', 'sotw', clusters],
      ['dialed', false],
      ['forgotten', 'sotw', clusters],
    ],
    available: false,
    lastDialFailed: true,
    told: [false],
  },
];

describe('ConfigAvailability: would a new Envoy get config now', () => {
  for (const row of rows) {
    it(`${row.name}: ${row.available ? 'available' : 'not available'}`, () => {
      assert.deepEqual(play(row.steps), { available: row.available, lastDialFailed: row.lastDialFailed, told: row.told });
    });
  }

  it('a listener that unsubscribed is told nothing more', () => {
    const availability = new ConfigAvailability(new LastKnownGoodConfig());
    const told: boolean[] = [];
    const unsubscribe = availability.onChange((available) => told.push(available));
    availability.dialed(true);
    availability.dialed(false);
    unsubscribe();
    availability.dialed(true);
    assert.deepEqual(told, [false]);
  });
});
