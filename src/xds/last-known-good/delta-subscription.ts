/**
 * One type's Delta subscription on one stream, as Envoy's xDS protocol
 * defines it ("How the client specifies what resources to return"): a first
 * request that subscribes to nothing is a wildcard (the legacy form), until a
 * request names something; "*" subscribes to the wildcard and unsubscribing
 * "*" ends it; resource_names_unsubscribe takes names out. Without this a
 * stream's names only add up: every name a push ever brought stays (issue 44).
 */
export interface DeltaSubscription {
  wildcard: boolean;
  /** The names subscribed to explicitly ("*" apart). */
  names: Set<string>;
  /** No request has named anything yet: an empty first request keeps the wildcard. */
  legacy: boolean;
}

const wildcardName = '*';

/** Before the stream's first request for the type. */
export const newDeltaSubscription = (): DeltaSubscription => ({ wildcard: false, names: new Set(), legacy: true });

/** Applies one request's subscribe and unsubscribe lists. */
export function updateDeltaSubscription(subscription: DeltaSubscription, request: { names: readonly string[]; unsubscribe: readonly string[] }): void {
  if (subscription.legacy) {
    if (request.names.length === 0) subscription.wildcard = true;
    else subscription.legacy = false;
  }
  for (const name of request.names) name === wildcardName ? (subscription.wildcard = true) : subscription.names.add(name);
  for (const name of request.unsubscribe) name === wildcardName ? (subscription.wildcard = false) : subscription.names.delete(name);
}

/** The subscription as a list of names, "*" first for a wildcard (as the last-known-good config and file keep it). */
export const subscribedNames = (subscription: DeltaSubscription): string[] => [
  ...(subscription.wildcard ? [wildcardName] : []),
  ...subscription.names,
];
