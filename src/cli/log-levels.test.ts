import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { parseLogLevels } from './log-levels.ts';

test('--log_output_level: a level, or component:level parts as Istio spells them (warning, none)', () => {
  const rows: [text: string, want: ReturnType<typeof parseLogLevels>][] = [
    ['', { default: 'info', components: {} }],
    ['debug', { default: 'debug', components: {} }],
    ['warning', { default: 'warn', components: {} }],
    ['none', { default: 'fatal', components: {} }],
    ['default:error', { default: 'error', components: {} }],
    ['default:info,xds:debug', { default: 'info', components: { xds: 'debug' } }],
    [' xds:warning , ca:none ,, trace ', { default: 'trace', components: { xds: 'warn', ca: 'fatal' } }],
    ['xds:debug:extra', { default: 'info', components: { xds: 'debug' } }],
  ];
  for (const [text, want] of rows) assert.deepEqual(parseLogLevels(text), want, JSON.stringify(text));
});

test('--log_output_level: an unknown level is exit 2 naming the flag and the level', () => {
  const rows: [text: string, level: string][] = [
    ['loud', 'loud'],
    ['xds:verbose', 'verbose'],
    ['info,default:warnings', 'warnings'],
    ['WARN', 'WARN'],
    ['xds:', ''],
  ];
  for (const [text, level] of rows) {
    const named = (error: unknown) => error instanceof AgentError && error.exitCode === 2
      && error.message === `--log_output_level: unknown level "${level}" (use trace, debug, info, warn, error, fatal)`;
    assert.throws(() => parseLogLevels(text), named, text);
  }
});
