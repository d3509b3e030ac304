import assert from 'node:assert/strict';
import { test } from 'node:test';
import { importsIn, readSourceFiles, type ImportOf } from '../../test/support/source-files.ts';

/**
 * An ES import of node:http or node:https (a value, not a type) reads every
 * export of the builtin, and its lazy WebSocket/EventSource exports then load
 * Node's bundled undici: CPU at every start and memory per pod
 * (docs/benchmarks.md). The product takes them from src/shared/node-http.ts.
 */
const loadsHttp = (specifiers: readonly ImportOf[]) => specifiers.some(({ from, typeOnly }) => !typeOnly && /^(node:)?https?$/.test(from));

test('no product file imports node:http or node:https as an ES module (src/shared/node-http.ts does, by require)', () => {
  const found = readSourceFiles()
    .filter((file) => loadsHttp(file.specifiers))
    .map((file) => file.path);
  assert.deepEqual(found, []);
});

test('the scan sees a value import and lets a type import pass', () => {
  assert.ok(loadsHttp(importsIn("import { request } from 'node:http';")));
  assert.ok(loadsHttp(importsIn("import * as https from 'node:https';")));
  assert.ok(loadsHttp(importsIn("const http = await import('http');")));
  assert.ok(!loadsHttp(importsIn("import type { IncomingHttpHeaders } from 'node:http';")));
  assert.ok(!loadsHttp(importsIn("import { connect } from 'node:http2';")));
});

/**
 * Node bounds how long a request may take to arrive, never how long its
 * answer may take to leave: every HTTP server of the product sets a send
 * timeout on each response (src/shared/send-timeout.ts), or a peer that
 * never reads holds its connection for good (issue 35).
 */
test('every file that makes an HTTP server bounds its responses\' send time with boundSend', () => {
  const servers = readSourceFiles().filter(
    (file) => /\bhttps?\.createServer\(|\bcreateServer\(/.test(file.text) && /node-http\.ts|node:https?['"]/.test(file.text),
  );
  assert.ok(servers.length > 0, 'the scan finds the status server at least');
  const unbounded = servers.filter((file) => !/\bboundSend\(/.test(file.text)).map((file) => file.path);
  assert.deepEqual(unbounded, []);
});
