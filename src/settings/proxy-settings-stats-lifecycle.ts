import { bool, count, duration, durationIn, secondsOrDuration } from './parse-values.ts';
import { declareSettings } from './setting.ts';
import { optionalList } from './settle-values.ts';

/** `pilot-agent proxy` settings, part of `proxySettings`: the stats Envoy keeps, restarts after failures, and the drain on SIGTERM. */
export const statsLifecycleSettings = declareSettings([
  {
    flag: 'statsInclusionPrefixes',
    value: '<list>',
    default: '',
    settle: optionalList,
    description:
      "Comma-separated Envoy stat prefixes to keep beyond Istio's defaults (as the sidecar.istio.io/statsInclusionPrefixes annotation, which it overrides)",
  },
  {
    flag: 'statsInclusionSuffixes',
    value: '<list>',
    default: '',
    settle: optionalList,
    description: "Comma-separated Envoy stat suffixes to keep beyond Istio's defaults (as sidecar.istio.io/statsInclusionSuffixes)",
  },
  {
    flag: 'statsInclusionRegexps',
    value: '<list>',
    default: '',
    settle: optionalList,
    description: "Comma-separated RE2 regexes of Envoy stats to keep beyond Istio's defaults (as sidecar.istio.io/statsInclusionRegexps)",
  },
  {
    flag: 'retryInitialDelay',
    key: 'retryInitialDelayMs',
    value: '<duration>',
    default: '200ms',
    parse: durationIn({ minMs: 10 }),
    description: 'First delay before restarting Envoy after it failed; doubles with every retry; at least 10ms',
  },
  {
    flag: 'retryBudget',
    value: '<n>',
    default: '10',
    parse: count,
    description: 'Restarts tried after failures before the agent exits 1; refilled by a new config or after 1m LIVE',
  },
  {
    flag: 'terminationDrainDuration',
    key: 'terminationDrainDurationMs',
    proxyConfig: 'terminationDrainDuration',
    value: '<duration>',
    default: '5s',
    env: 'TERMINATION_DRAIN_DURATION_SECONDS',
    parse: secondsOrDuration,
    description:
      "How long to drain on SIGTERM/SIGINT before stopping Envoy (a duration, or whole seconds); independent of --drainDuration, which is Envoy's " +
        "own drain on hot restart",
  },
  {
    flag: 'exitOnZeroActiveConnections',
    value: '[bool]',
    default: false,
    env: 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS',
    parse: bool,
    description: 'On termination, stop as soon as no downstream connection is left (after --minimumDrainDuration) instead of draining the whole time',
  },
  {
    flag: 'minimumDrainDuration',
    key: 'minimumDrainDurationMs',
    value: '<duration>',
    default: '5s',
    env: 'MINIMUM_DRAIN_DURATION',
    parse: duration,
    description: 'With --exitOnZeroActiveConnections: drain at least this long before checking connections',
  },
]);
