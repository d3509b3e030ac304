import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { isLoopbackCidr, parseCidr, parseCidrSelection, parseGroupList, parseOwnerId, parseOwnerIds, parsePort, parsePortSelection } from './ports.ts';

/** The parsers the flags, the env and inject's values share; each error line names its source and quotes the text. */
function rejects(run: () => unknown, message: string): void {
  assert.throws(run, (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message, message);
}

describe('parsePort', () => {
  it('takes a whole decimal from 1 to 65535, around spaces', () => {
    for (const [text, port] of [[' 80 ', 80], ['1', 1], ['65535', 65535], ['0080', 80]] as const) assert.equal(parsePort('-p', text), port, text);
  });

  it('refuses 0, 65536 and anything JavaScript would also read as a number', () => {
    for (const text of ['0', '65536', '1e3', '0x50', '+80', '80.0', '8 0', '']) {
      rejects(() => parsePort('-p', text), `-p: port "${text}" is not an integer from 1 to 65535`);
    }
  });

  it('"*" around spaces selects every port; a list keeps each port once', () => {
    assert.equal(parsePortSelection('-b', ' * '), '*');
    assert.deepEqual(parsePortSelection('-b', '80, 80,443'), [80, 443]);
  });
});

describe('parseOwnerId(s)', () => {
  it('takes a whole decimal from 0 to 2^32-2, around spaces', () => {
    for (const [text, id] of [[' 1337 ', '1337'], ['0', '0'], ['4294967294', '4294967294'], ['007', '7']] as const) {
      assert.equal(parseOwnerId('proxyUID', text), id, text);
    }
  });

  it('refuses 2^32-1 (no owner), signs, exponents and hex', () => {
    for (const text of ['4294967295', '-1', '1e3', '0x10', '1.0', 'istio']) rejects(() => parseOwnerId('-u', text), `-u: "${text}" is not a numeric id`);
  });

  it('a list needs one id at least', () => {
    assert.deepEqual(parseOwnerIds('-u', '3, 4,3'), ['3', '4']);
    for (const text of ['', ' , ']) rejects(() => parseOwnerIds('-u', text), '-u: no id given');
  });
});

it('parseGroupList quotes the group it refuses', () => {
  assert.deepEqual(parseGroupList('env G', 'java, 202,java'), ['java', '202']);
  rejects(() => parseGroupList('env G', 'java,no group'), 'env G: "no group" is not a group name or id');
});

describe('parseCidr', () => {
  it('reads a range of either family, and a bare address as a host range', () => {
    const cases = [['10.0.0.0/8', '10.0.0.0/8'], ['0.0.0.0/0', '0.0.0.0/0'], ['1.2.3.4', '1.2.3.4/32'], ['fd00::1', 'fd00::1/128'], ['::/0', '::/0']];
    for (const [text, cidr] of cases) assert.equal(parseCidr('-i', text!), cidr, text);
  });

  it('refuses what is no address, a second slash, and a prefix that is not a whole decimal in range', () => {
    const bad = ['foo', 'foo/8', '', '10.0.0.0/8/8', '10.0.0.0/', '10.0.0.0/x', '10.0.0.0/-1', '10.0.0.0/1e1', '10.0.0.0/0x8', '10.0.0.0/33', 'fd00::/129'];
    for (const text of bad) {
      rejects(() => parseCidr('-i', text), `-i: "${text}" is not an IPv4 or IPv6 address or CIDR`);
    }
  });

  it('a selection: "*" around spaces is everything', () => {
    assert.equal(parseCidrSelection('-i', ' * '), '*');
    assert.deepEqual(parseCidrSelection('-i', ''), { v4: [], v6: [] });
  });
});

it('isLoopbackCidr: 127/8, and ::1 however it is written', () => {
  const loopback = ['127.0.0.1/32', '127.1.2.3/8', '::1/128', '0:0:0:0:0:0:0:1/128', '00:0:0:0:0:0:0:1', '0:00:0:0:0:0:0:1', '0:0:0:0:0:0:0:01'];
  for (const cidr of loopback) assert.equal(isLoopbackCidr(cidr), true, cidr);
  const other = ['10.0.0.1/32', '128.0.0.1/32', 'fd00::1/128', '::2/128', '10:0:0:0:0:0:0:1', '0:0:0:0:0:0:0:10', '0:0:0:0:0:0:1', '::/0'];
  for (const cidr of other) assert.equal(isLoopbackCidr(cidr), false, cidr);
});
