import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ProbeAction } from './config.ts';
import { followRedirects, type HopAnswer } from './redirects.ts';

type HttpAction = Extract<ProbeAction, { kind: 'http' }>;
const action: HttpAction = { kind: 'http', scheme: 'http', host: '127.0.0.1', port: 8080, path: '/start', headers: [] };

/** A fake app: answers by path; records each hop it was asked. */
function app(answers: Record<string, HopAnswer>) {
  const hops: string[] = [];
  const get = async (hop: HttpAction) => {
    hops.push(`${hop.scheme}://${hop.host}:${hop.port}${hop.path}`);
    return answers[hop.path] ?? { status: 404 };
  };
  return { hops, get };
}

describe('followRedirects', () => {
  const cases: [string, Record<string, HopAnswer>, number | RegExp, string[]][] = [
    ['a plain answer is the verdict', { '/start': { status: 503 } }, 503, ['http://127.0.0.1:8080/start']],
    [
      'a same-host redirect is followed to its failure',
      { '/start': { status: 302, location: '/health' }, '/health': { status: 500 } },
      500,
      ['http://127.0.0.1:8080/start', 'http://127.0.0.1:8080/health'],
    ],
    [
      'an absolute same-host redirect may change port and query',
      { '/start': { status: 301, location: 'http://127.0.0.1:9090/h?x=1' }, '/h?x=1': { status: 204 } },
      204,
      ['http://127.0.0.1:8080/start', 'http://127.0.0.1:9090/h?x=1'],
    ],
    [
      'a redirect to another host is a success, not followed',
      { '/start': { status: 302, location: 'http://example.com/' } },
      200,
      ['http://127.0.0.1:8080/start'],
    ],
    ['a redirect without Location is a success', { '/start': { status: 307 } }, 200, ['http://127.0.0.1:8080/start']],
    ['a non-http scheme is not followed', { '/start': { status: 302, location: 'file:///etc/passwd' } }, 200, ['http://127.0.0.1:8080/start']],
    [
      '299 is a verdict, 300 a redirect',
      { '/start': { status: 300, location: '/a' }, '/a': { status: 299 } },
      299,
      ['http://127.0.0.1:8080/start', 'http://127.0.0.1:8080/a'],
    ],
    [
      '399 is a redirect, 400 a verdict',
      { '/start': { status: 399, location: '/a' }, '/a': { status: 400 } },
      400,
      ['http://127.0.0.1:8080/start', 'http://127.0.0.1:8080/a'],
    ],
    [
      'to https on the same host without a port: 443',
      { '/start': { status: 302, location: 'https://127.0.0.1/s' } },
      404,
      ['http://127.0.0.1:8080/start', 'https://127.0.0.1:443/s'],
    ],
    [
      'to http on the same host without a port: 80',
      { '/start': { status: 302, location: 'http://127.0.0.1/p' } },
      404,
      ['http://127.0.0.1:8080/start', 'http://127.0.0.1:80/p'],
    ],
    ['a Location that does not parse is a success', { '/start': { status: 302, location: 'http://[' } }, 200, ['http://127.0.0.1:8080/start']],
    [
      'exactly 10 redirects, then the verdict',
      Object.fromEntries([
        ...Array.from({ length: 10 }, (_, at) => [at === 0 ? '/start' : `/r${at}`, { status: 302, location: `/r${at + 1}` }]),
        ['/r10', { status: 204 }],
      ]),
      204,
      ['http://127.0.0.1:8080/start', ...Array.from({ length: 10 }, (_, at) => `http://127.0.0.1:8080/r${at + 1}`)],
    ],
    [
      'a redirect loop stops after 10 redirects',
      { '/start': { status: 302, location: '/start' } },
      /stopped after 10 redirects/,
      Array(11).fill('http://127.0.0.1:8080/start'),
    ],
  ];
  for (const [name, answers, expected, hops] of cases) {
    it(name, async () => {
      const fake = app(answers);
      if (expected instanceof RegExp) await assert.rejects(followRedirects(action, fake.get), expected);
      else assert.equal(await followRedirects(action, fake.get), expected);
      assert.deepEqual(fake.hops, hops);
    });
  }
});

it('follows a same-host redirect of an IPv6 app, and not one to another IPv6 host', async () => {
  const v6: HttpAction = { ...action, host: '::1' };
  const fake = app({ '/start': { status: 302, location: 'http://[::1]:9/next' }, '/next': { status: 302, location: 'http://[2001:2::1]:9/x' } });
  assert.equal(await followRedirects(v6, fake.get), 200);
  assert.deepEqual(fake.hops, ['http://::1:8080/start', 'http://::1:9/next']);
});
