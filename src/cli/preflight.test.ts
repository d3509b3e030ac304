import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { checkResolvedConfig } from './preflight.ts';
import { proxyFlags, toOption } from './proxy-flags.ts';
import { effectiveAuthPolicy, xdsRootCaFile, xdsTransport, xdsUpstream } from '../runtime/xds-upstream.ts';

/** Parses a proxy command line as the CLI does; returns the config or the one-line error. */
function parse(args: string[]): AgentConfig | string {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  try {
    command.parse(args, { from: 'user' });
    const commandLine = { values: command.opts(), sourceOf: (name: string) => command.getOptionValueSource(name) };
    return checkResolvedConfig(resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([]) }).config);
  } catch (error) {
    return (error as Error).message;
  }
}

const rejected: [args: string[], message: RegExp][] = [
  [['--statusPort', '15000'], /^--statusPort: 15000 is also --proxyAdminPort/],
  [['--prometheusPort', '15000'], /^--prometheusPort: 15000 is also --proxyAdminPort/],
  [['--readinessPort', '15020'], /^--readinessPort: 15020 is also --statusPort/],
  [['--prometheusPort', '15021'], /^--prometheusPort: 15021 is also --readinessPort/],
  [['--proxyComponentLogLevel', 'nosuch:verbose'], /--proxyComponentLogLevel.*"nosuch" is not an Envoy log component/],
  [['--proxyComponentLogLevel', 'upstream:verbose'], /--proxyComponentLogLevel.*"verbose" is not an Envoy log level/],
  [['--proxyComponentLogLevel', 'upstream'], /--proxyComponentLogLevel.*"upstream" is not component:level/],
  [['--concurrency', '100000'], /--concurrency.*'100000'.*more than 512 worker threads/],
  [['--certResync', '1000h'], /--certResync.*'1000h'.*must be at most 596h31m23.647s/],
  [['--terminationDrainDuration', '1000h'], /--terminationDrainDuration.*must be at most/],
  [['--terminationDrainDuration', '3000000'], /--terminationDrainDuration.*'3000000'.*must be at most/],
  [['--drainDuration', '1000h'], /--drainDuration.*must be at most/],
  [['--certResync', '1ns'], /--certResync.*'1ns'.*must be at least 1s \(or 0s: off\)/],
  [['--certResync', '999ms'], /--certResync.*must be at least 1s/],
  [['--retryInitialDelay', '1ms'], /--retryInitialDelay.*must be at least 10ms/],
  [['--drainDuration', '10m', '--parentShutdownDuration', '1s'], /^--parentShutdownDuration: 1s is shorter than --drainDuration \(600s\)/],
];

test('flags that cannot work are rejected with the flag named', () => {
  for (const [args, message] of rejected) {
    const result = parse(args);
    assert.equal(typeof result, 'string', `${args.join(' ')} was accepted`);
    assert.match(result as string, message, args.join(' '));
  }
});

const accepted: string[][] = [
  [],
  ['--statusPort', '0', '--readinessPort', '0', '--prometheusPort', '0'],
  ['--proxyComponentLogLevel', 'upstream:debug,connection:trace,config:warn'],
  ['--concurrency', '512'],
  ['--certResync', '0s'],
  ['--certResync', '1s'],
  ['--retryInitialDelay', '20ms'],
  ['--terminationDrainDuration', '596h'],
  ['--drainDuration', '1s', '--parentShutdownDuration', '1s'],
];

test('flags within range are accepted', () => {
  for (const args of accepted) assert.equal(typeof parse(args), 'object', `${args.join(' ')}: ${String(parse(args))}`);
});

test('how the agent talks to the discovery server: plaintext, TLS with a token (istiod\'s 15012, the default), or mutual TLS (the token too)', () => {
  const rows: [args: string[], policy: string, tokenFile: string | undefined][] = [
    [['--discoveryAddress', 'istiod:15010'], 'NONE', undefined],
    [['--discoveryAddress', 'istiod:15012'], 'TLS', './var/run/secrets/tokens/istio-token'],
    [['--discoveryAddress', 'istiod:15012', '--xdsTokenFile', '/t'], 'TLS', '/t'],
    [['--discoveryAddress', 'xds:9000', '--xdsRootCa', '/root.pem'], 'TLS', './var/run/secrets/tokens/istio-token'],
    [['--discoveryAddress', 'istiod:15012', '--controlPlaneAuthPolicy', 'MUTUAL_TLS'], 'MUTUAL_TLS', './var/run/secrets/tokens/istio-token'],
    [[], 'TLS', './var/run/secrets/tokens/istio-token'],
    [['--controlPlaneAuthPolicy', 'NONE', '--discoveryAddress', 'istio-pilot:15010'], 'NONE', undefined],
  ];
  for (const [args, policy, tokenFile] of rows) {
    const config = parse(args);
    assert.ok(typeof config !== 'string', String(config));
    assert.equal(xdsTransport(config), policy, args.join(' '));
    assert.equal(xdsUpstream(config).tokenFile, tokenFile, args.join(' '));
  }
});

test('PROV_CERT: TLS offers our certificate from there when it is there, and its root comes after a root mounted in --certDir', () => {
  const config = parse(['--discoveryAddress', 'istiod:15012', '--certDir', '/absent/certs']);
  assert.ok(typeof config !== 'string', String(config));
  const upstream = xdsUpstream(config, { clusterid: '' }, '/vm/certs');
  assert.deepEqual([upstream.policy, upstream.certDir, upstream.rootCaFile], ['MUTUAL_TLS', '/vm/certs', '/vm/certs/root-cert.pem']);
  assert.equal(upstream.tokenFile, './var/run/secrets/tokens/istio-token');
  assert.equal(xdsRootCaFile(config, () => true, '/vm/certs'), '/absent/certs/root-cert.pem');
  assert.equal(xdsUpstream(config).rootCaFile, './var/run/secrets/istio/root-cert.pem');
});

test('the root istiod must chain to, in Istio\'s order: the flag (SYSTEM too), a root mounted in --certDir, then istiod\'s published root', () => {
  const mounted = resolve('etc/certs/root-cert.pem'); // Istio's ./etc/certs, against the working directory
  const rows: [args: string[], mountedExists: boolean, root: string][] = [
    [['--xdsRootCa', '/root.pem'], true, '/root.pem'],
    [['--xdsRootCa', 'SYSTEM'], true, 'SYSTEM'],
    [[], true, mounted],
    [['--certDir', '/other'], true, './var/run/secrets/istio/root-cert.pem'],
    [[], false, './var/run/secrets/istio/root-cert.pem'],
  ];
  for (const [args, mountedExists, root] of rows) {
    const config = parse(['--discoveryAddress', 'istiod:15012', ...args]);
    assert.ok(typeof config !== 'string', String(config));
    assert.equal(
      xdsRootCaFile(config, (path) => mountedExists && path === mounted),
      root,
      `${args.join(' ')} (mounted root ${mountedExists ? 'present' : 'absent'})`,
    );
  }
});

test('PROV_CERT on a plaintext discovery address (15010) stays plaintext: no certificate offered, NONE reported', () => {
  const config = parse(['--discoveryAddress', 'istio-pilot:15010']);
  assert.ok(typeof config !== 'string', String(config));
  assert.equal(xdsUpstream(config, { clusterid: '' }, '/vm/certs').policy, 'NONE');
  assert.equal(effectiveAuthPolicy(config), 'NONE');
});
