import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sumActiveConnections } from './active-connections.ts';

const stats = `http.admin.downstream_cx_active: 1
http.ingress_http.downstream_cx_active: 3
listener.0.0.0.0_15090.downstream_cx_active: 1
listener.127.0.0.1_8443.downstream_cx_active: 2
listener.127.0.0.1_8443.worker_0.downstream_cx_active: 2
listener.127.0.0.1_8080.downstream_cx_active: 1
listener.admin.downstream_cx_active: 1
listener.admin.main_thread.downstream_cx_active: 1
`;

describe('sumActiveConnections', () => {
  it('sums listener gauges, leaving out admin, workers and ignored ports', () => {
    assert.equal(sumActiveConnections(stats, [15090]), 3);
  });

  it('counts the agent\'s own listeners when not told to ignore them', () => {
    assert.equal(sumActiveConnections(stats), 4);
  });

  it('is undefined when no listener gauge is there', () => {
    assert.equal(sumActiveConnections('http.admin.downstream_cx_active: 1\n'), undefined);
    assert.equal(sumActiveConnections(''), undefined);
  });

  it('leaves out internal listeners, whose pipes stay open as long as a tunnel pool does (Istio\'s waypoint rule)', () => {
    const internal = 'listener.envoy_internal_connect_originate.downstream_cx_active: 2\nlistener.envoy_internal_main_internal.downstream_cx_active: 3\n';
    assert.equal(sumActiveConnections(`${internal}listener.0.0.0.0_15008.downstream_cx_active: 1\n`), 1);
    assert.equal(sumActiveConnections(internal), undefined);
  });

  it('is zero once every connection is closed', () => {
    assert.equal(sumActiveConnections('listener.127.0.0.1_8443.downstream_cx_active: 0\n'), 0);
  });
});
