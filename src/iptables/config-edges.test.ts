import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { gatherFlags, goDuration, parseBool, resolveCaptureConfig, resolveRunConfig } from './config.ts';

/** Edges of config.ts the mutation run found unguarded: whole-text matches, range bounds, the env-only checks. */
const resolve = (cli: Record<string, string>, env: Record<string, string> = {}) => resolveCaptureConfig(gatherFlags(cli, env), env);

function rejects(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => error instanceof AgentError && error.exitCode === 2 && message.test(error.message), String(message));
}

describe('config edges', () => {
  it('parseBool takes Go\'s words whole, in any case and around spaces, and nothing that only starts or ends with one', () => {
    for (const text of ['1', 't', 'TRUE', ' true ']) assert.equal(parseBool({ text, name: '--x' }), true, text);
    for (const text of ['0', 'F', 'False', ' false ']) assert.equal(parseBool({ text, name: '--x' }), false, text);
    for (const text of ['truex', 'xtrue', '10', 'false0', 'ofalse', 'yes'])
      assert.throws(() => parseBool({ text, name: '--x' }), new RegExp(`--x: "${text}" is not true or false`), text);
  });

  it('the TPROXY mark takes an integer from 1 to 2^32-1, whole and trimmed; the route table up to 2^32-2', () => {
    assert.equal(resolve({ 'istio-inbound-tproxy-mark': ' 1 ' }).tproxyMark, 1);
    assert.equal(resolve({ 'istio-inbound-tproxy-mark': '4294967295' }).tproxyMark, 0xffffffff);
    assert.equal(resolve({ 'istio-inbound-tproxy-route-table': '4294967294' }).tproxyRouteTable, 0xfffffffe);
    for (const text of ['0', '4294967296', '1x', 'x1', '-1', '1.5']) {
      rejects(() => resolve({ 'istio-inbound-tproxy-mark': text }), new RegExp(`"${text.replace('.', '\\.')}" is not an integer from 1 to 4294967295`));
    }
    rejects(() => resolve({ 'istio-inbound-tproxy-route-table': '4294967295' }), /"4294967295" is not an integer from 1 to 4294967294/);
  });

  it('the loopback CIDR must be IPv4 loopback with a prefix from 8 to 32', () => {
    const env = (cidr: string) => ({ ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: cidr });
    assert.equal(resolve({}, env('127.0.0.0/8')).loopbackCidr, '127.0.0.0/8');
    assert.equal(resolve({}, env('127.0.0.6/32')).loopbackCidr, '127.0.0.6/32');
    for (const cidr of ['127.0.0.0/7', '127.0.0.1/33', '10.0.0.1/32', '::1/128', '127.0.0.1', '127.0.0.1/x8', '127.0.0.1/8x', 'x127.0.0.1/32']) {
      rejects(
        () => resolve({}, env(cidr)),
        new RegExp(`^env ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: "${cidr.replaceAll('.', '\\.')}" is not an IPv4 loopback CIDR with a prefix from 8 to 32$`),
      );
    }
  });

  it('at most 64 owner groups are captured by name', () => {
    const groups = (n: number) => ({ ISTIO_OUTBOUND_OWNER_GROUPS: Array.from({ length: n }, (_, i) => String(1000 + i)).join(',') });
    assert.equal(resolve({}, groups(64)).ownerGroups.values.length, 64);
    rejects(() => resolve({}, groups(65)), /^env ISTIO_OUTBOUND_OWNER_GROUPS: 65 groups, at most 64$/);
    assert.deepEqual(resolve({}, { ISTIO_OUTBOUND_OWNER_GROUPS: ' * ', ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE: '7' }).ownerGroups, {
      except: true,
      values: ['7'],
    });
  });

  it('--probe-timeout: a whole Go duration from 1ms to 1h, decimals of any length', () => {
    const at = (text: string) => goDuration({ text, name: '--probe-timeout' });
    assert.equal(at('1.25s'), 1250);
    assert.equal(at(' 1h '), 3_600_000);
    assert.equal(at('1ms'), 1);
    for (const text of ['', ' ', '5', 's', '5sx', 'x5s', '1s 2s'])
      assert.throws(() => at(text), new RegExp(`^AgentError: --probe-timeout: "${text}" is not a duration like 5s or 500ms$`), JSON.stringify(text));
    for (const text of ['0s', '0ms', '1h1ms', '61m'])
      assert.throws(() => at(text), new RegExp(`^AgentError: --probe-timeout: "${text}" is not a duration from 1ms to 1h$`), text);
  });
});

describe('config edges: blank and padded values', () => {
  it('values are read around spaces: blank -u, -g and --network-namespace are unset', () => {
    const config = resolve({ 'proxy-uid': ' ', 'proxy-gid': ' ', 'network-namespace': ' ', 'istio-inbound-interception-mode': ' TPROXY ' });
    assert.deepEqual([config.proxyUids, config.proxyGids, config.mode], [['1337'], ['1337'], 'TPROXY']);
    assert.deepEqual(resolve({ 'envoy-port': ' 15101 ', 'istio-inbound-ports': ' * ' }).outboundCapturePort, 15101);
    const run = (variant: string) => resolveRunConfig(gatherFlags({ 'force-iptables-binary': variant }, {})).binaryVariant;
    assert.deepEqual([run(' nft '), run('legacy '), run('')], ['nft', 'legacy', '']);
  });

  it('a -u or -g of commas only gives no id, an error', () => {
    rejects(() => resolve({ 'proxy-uid': ',' }), /^-u: no id given$/);
    rejects(() => resolve({ 'proxy-gid': ' ,, ' }), /^-g: no id given$/);
  });

  it('the mark and the route table take no exponent, hex or sign', () => {
    for (const text of ['1e3', '0x10', '+7']) {
      const quoted = text.replace('+', '\\+');
      rejects(() => resolve({ 'istio-inbound-tproxy-route-table': text }), new RegExp(`^-r: "${quoted}" is not an integer from 1 to 4294967294$`));
    }
  });

  it('the loopback CIDR must be an IPv4 address, not only start like one', () => {
    for (const cidr of ['127.foo/8', '127.0.0/8', '127.0.0.1.5/32']) {
      rejects(() => resolve({}, { ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: cidr }), /^env ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: .* is not an IPv4 loopback CIDR/);
    }
  });

  it('a bad owner group is named with its env var', () => {
    rejects(() => resolve({}, { ISTIO_OUTBOUND_OWNER_GROUPS: 'java,a b' }), /^env ISTIO_OUTBOUND_OWNER_GROUPS: "a b" is not a group name or id$/);
  });

  it('a flag missing from the set is named by its long name', () => {
    rejects(() => resolveCaptureConfig({}), /^--cni-mode: "" is not true or false$/);
    rejects(() => resolveRunConfig({}), /^--dry-run: "" is not true or false$/);
  });
});
