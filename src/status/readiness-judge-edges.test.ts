import assert from 'node:assert/strict';
import { it } from 'node:test';
import { judgeReadiness, type ReadinessStats } from './readiness.ts';

const live: ReadinessStats = { serverState: 0, workersStarted: 1, cdsSuccess: 1, cdsRejected: 0, ldsSuccess: 1, ldsRejected: 0 };

it("an answer that does not tell its epoch (no server.hot_restart_epoch) is judged on its own stats, whatever epoch serves", () => {
  assert.deepEqual(judgeReadiness(live, 1), { ready: true });
  assert.deepEqual(judgeReadiness({ ...live, hotRestartEpoch: 1 }, 1), { ready: true });
  assert.equal(judgeReadiness({ ...live, hotRestartEpoch: 0 }, 1).ready, false);
});
