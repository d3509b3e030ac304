import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../shared/log.ts';
import { EcdsInterceptor } from './ecds-interceptor.ts';
import type { EcdsOutcome } from '../../discovery/consumers.ts';
import { extensionConfigType } from '../../discovery/type-urls.ts';
import { frame } from '../../grpc/grpc-frame.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import { readRequest, type RequestFields } from '../../discovery/wire.ts';

const listenerType = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const response = (type: string, nonce: string, payload = 'x') =>
  Buffer.concat([lenField(2, Buffer.concat([lenField(1, type), lenField(2, payload)])), lenField(4, type), lenField(5, nonce)]);
const ecdsRequest: RequestFields = {
  typeUrl: extensionConfigType,
  versionInfo: 'v1',
  nonce: '',
  error: undefined,
  names: ['ext-a'],
  node: undefined,
  unsubscribe: [],
  initialVersions: 0,
};

function setup(convert: (message: Buffer) => Promise<EcdsOutcome>) {
  const out: Buffer[] = [];
  const sent: Buffer[] = [];
  const interceptor = new EcdsInterceptor({
    mode: 'sotw',
    forward: (bytes) => out.push(bytes),
    convert,
    send: (request) => sent.push(request),
    failed: (error) => assert.fail(error),
    maxBytes: 1 << 20,
    logger: silentLogger,
  });
  return { interceptor, out, sent, joined: () => Buffer.concat(out) };
}

describe('ECDS interception', () => {
  it('passes chunks as they came until Envoy asks for ECDS', () => {
    const { interceptor, out } = setup(async () => assert.fail('nothing to convert'));
    const chunk = frame(response(extensionConfigType, 'n1'));
    interceptor.push(chunk);
    assert.equal(out.length, 1);
    assert.equal(out[0], chunk, 'the same buffer, untouched');
  });

  it('once armed: other types pass whole, ECDS responses are replaced in order', async () => {
    const converted: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { interceptor, joined } = setup(async (message) => {
      await gate;
      converted.push(message.toString('latin1'));
      return { message: response(extensionConfigType, 'rewritten') };
    });
    interceptor.envoyRequested(ecdsRequest);
    const lds = frame(response(listenerType, 'l1'));
    const ecds = frame(response(extensionConfigType, 'e1'));
    // The ECDS response arrives split in two chunks, a listener response after it.
    interceptor.push(ecds.subarray(0, 7));
    interceptor.push(Buffer.concat([ecds.subarray(7), lds]));
    assert.deepEqual(joined(), lds, 'the listener response is not held behind the conversion');
    assert.equal(interceptor.pending, 1);
    release();
    await gate;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(joined(), Buffer.concat([lds, frame(response(extensionConfigType, 'rewritten'))]));
    assert.equal(converted.length, 1);
    assert.equal(interceptor.pending, 0);
  });

  it('a conversion that ends mid-message waits for that message to end', async () => {
    const { interceptor, joined } = setup(async () => ({ message: undefined }));
    interceptor.envoyRequested(ecdsRequest);
    const ecds = frame(response(extensionConfigType, 'e1'));
    const lds = frame(response(listenerType, 'l1', 'y'.repeat(100)));
    interceptor.push(ecds);
    interceptor.push(lds.subarray(0, 50));
    await new Promise((resolve) => setImmediate(resolve));
    interceptor.push(lds.subarray(50));
    assert.deepEqual(joined(), Buffer.concat([lds, ecds]), 'the unchanged ECDS response follows the whole listener response');
  });

  it('a NACK goes upstream with the subscription, and Envoy never sees the response', async () => {
    const { interceptor, out, sent } = setup(async () => ({ nack: 'cannot read it', nonce: 'e1' }));
    interceptor.envoyRequested(ecdsRequest);
    interceptor.push(frame(response(extensionConfigType, 'e1')));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(out.length, 0);
    const nack = readRequest(sent[0]!, 'sotw');
    assert.equal(nack.typeUrl, extensionConfigType);
    assert.equal(nack.nonce, 'e1');
    assert.equal(nack.versionInfo, 'v1');
    assert.deepEqual(nack.names, ['ext-a']);
    assert.equal(nack.error, 'cannot read it');
  });
});
