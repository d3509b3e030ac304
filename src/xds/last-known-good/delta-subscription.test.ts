import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newDeltaSubscription, subscribedNames, updateDeltaSubscription } from './delta-subscription.ts';

/** Each row: the requests of one stream, in order, and the subscription they leave (Envoy's xDS protocol, Delta). */
const rows: { name: string; requests: { names?: string[]; unsubscribe?: string[] }[]; left: string[] }[] = [
  { name: 'an empty first request is the legacy wildcard', requests: [{}], left: ['*'] },
  { name: 'ACKs (empty lists) keep the legacy wildcard', requests: [{}, {}, {}], left: ['*'] },
  { name: 'naming a resource after the legacy wildcard keeps the wildcard', requests: [{}, { names: ['a'] }], left: ['*', 'a'] },
  { name: 'a first request with names is no wildcard', requests: [{ names: ['a', 'b'] }], left: ['a', 'b'] },
  { name: 'once named, an empty request is no wildcard', requests: [{ names: ['a'] }, { unsubscribe: ['a'] }, {}], left: [] },
  { name: 'names add up and unsubscribed names leave', requests: [{ names: ['a', 'b'] }, { names: ['c'], unsubscribe: ['a'] }], left: ['b', 'c'] },
  { name: '"*" subscribes to the wildcard beside names', requests: [{ names: ['a', '*'] }], left: ['*', 'a'] },
  { name: 'unsubscribing "*" ends the wildcard, names stay', requests: [{ names: ['*', 'a'] }, { unsubscribe: ['*'] }], left: ['a'] },
  { name: 'unsubscribing "*" ends even the legacy wildcard', requests: [{}, { unsubscribe: ['*'] }], left: [] },
  { name: 'unsubscribing a name never subscribed is harmless', requests: [{ names: ['a'] }, { unsubscribe: ['zz'] }], left: ['a'] },
  { name: 'a name churned in and out leaves nothing behind', requests: Array.from({ length: 50 }, (_, i) => [{ names: [`n${i}`] }, { unsubscribe: [`n${i}`] }]).flat(), left: [] },
];

describe('Delta subscriptions as Envoy\'s xDS protocol defines them', () => {
  for (const row of rows) {
    it(row.name, () => {
      const subscription = newDeltaSubscription();
      for (const request of row.requests) updateDeltaSubscription(subscription, { names: request.names ?? [], unsubscribe: request.unsubscribe ?? [] });
      assert.deepEqual(subscribedNames(subscription), row.left);
    });
  }
});
