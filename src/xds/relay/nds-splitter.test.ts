import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../../test/support/sync-deadline.ts';
import { encodeNameTable } from '../../dns/name-table-wire.ts';
import { frame } from '../../grpc/grpc-frame.ts';
import { NdsSplitter } from './nds-splitter.ts';
import { nameTableType } from '../../discovery/type-urls.ts';
import { ndsAck, ndsSubscribe, readNdsResponse } from './nds-wire.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import { readRequest, type XdsMode } from '../../discovery/wire.ts';

const listenerType = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const any = (typeUrl: string, value: Buffer) => Buffer.concat([lenField(1, typeUrl), lenField(2, value)]);

/** A response as Go servers write it: version, resources, type, nonce (Delta resources wrap the Any). */
function response(mode: XdsMode, typeUrl: string, resources: Buffer[], nonce: string): Buffer {
  const wrapped = resources.map((value) =>
    mode === 'sotw' ? any(typeUrl, value) : Buffer.concat([lenField(1, 'r1'), lenField(2, any(typeUrl, value)), lenField(3, 'name')]),
  );
  return Buffer.concat([lenField(1, 'v1'), ...wrapped.map((resource) => lenField(2, resource)), lenField(4, typeUrl), lenField(5, nonce)]);
}

const table = encodeNameTable([['db.legacy.internal', { ips: ['240.240.0.1'] }]]);

function split(mode: XdsMode, stream: Buffer, chunkSize: number) {
  const forwarded: Buffer[] = [];
  const tables: Buffer[] = [];
  const splitter = new NdsSplitter({
    mode,
    forward: (bytes) => forwarded.push(Buffer.from(bytes)),
    nameTable: (message) => tables.push(message),
    maxBytes: 1 << 26,
  });
  for (let at = 0; at < stream.length; at += chunkSize) splitter.push(stream.subarray(at, at + chunkSize));
  return { forwarded: Buffer.concat(forwarded), tables };
}

for (const mode of ['sotw', 'delta'] as const) {
  describe(`NdsSplitter (${mode})`, () => {
    const lds = frame(response(mode, listenerType, [Buffer.alloc(300, 7), Buffer.alloc(200_000, 8)], 'n1'));
    const empty = frame(response(mode, listenerType, [], 'n2'));
    const nds = response(mode, nameTableType, [table], 'n3');
    const stream = Buffer.concat([lds, frame(nds), empty]);

    for (const chunkSize of [1, 5, 7, 64, 4096, stream.length]) {
      it(`passes Envoy's responses on byte for byte and keeps the NDS one, in chunks of ${chunkSize}`, () => {
        const { forwarded, tables } = split(mode, stream, chunkSize);
        assert.ok(forwarded.equals(Buffer.concat([lds, empty])), 'Envoy gets exactly its responses');
        assert.equal(tables.length, 1);
        assert.ok(tables[0]!.equals(nds));
      });
    }

    it('is not at a boundary while a response is held to learn its type', () => {
      const splitter = new NdsSplitter({ mode, forward: () => undefined, nameTable: () => undefined, maxBytes: 1 << 26 });
      splitter.push(frame(nds).subarray(0, 12));
      assert.equal(splitter.atBoundary, false, 'an upstream ending here is a truncated response');
      splitter.push(frame(nds).subarray(12));
      assert.equal(splitter.atBoundary, true);
    });

    it('reads the table, version and nonce of an NDS response', () => {
      const read = readNdsResponse(nds, mode);
      assert.equal(read.nonce, 'n3');
      assert.equal(read.version, 'v1');
      assert.ok(read.table?.equals(table));
    });

    it('ACKs and NACKs in the request format of the mode', () => {
      const ack = readRequest(ndsAck(mode, { version: 'v1', nonce: 'n3' }), mode);
      assert.equal(ack.typeUrl, nameTableType);
      assert.equal(ack.nonce, 'n3');
      assert.equal(ack.error, undefined);
      if (mode === 'sotw') assert.equal(ack.versionInfo, 'v1');
      const nack = readRequest(ndsAck(mode, { version: 'v1', nonce: 'n3' }, 'bad table'), mode);
      assert.equal(nack.error, 'bad table');
      assert.equal(readRequest(ndsSubscribe(mode), mode).typeUrl, nameTableType);
    });
  });
}
