import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstPemCertificate, pemBlocksOpened, pemCertificates, strictPemBlock } from './pem.ts';

const cert = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----`;
const key = '-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----';

describe('PEM helpers', () => {
  const rows: { name: string; text: string; certificates: string[]; opened: number }[] = [
    { name: 'no PEM at all', text: 'hello', certificates: [], opened: 0 },
    { name: 'a chain of two, in order', text: `${cert('QQ==')}\n${cert('Qg==')}\n`, certificates: [cert('QQ=='), cert('Qg==')], opened: 2 },
    {
      name: 'a half-written second block is opened but not complete',
      text: `${cert('QQ==')}\n-----BEGIN CERTIFICATE-----\nQg`,
      certificates: [cert('QQ==')],
      opened: 2,
    },
    { name: 'a key block is opened but is no certificate', text: `${key}\n${cert('QQ==')}`, certificates: [cert('QQ==')], opened: 2 },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(pemCertificates(row.text), row.certificates);
      assert.equal(firstPemCertificate(row.text), row.certificates[0]);
      assert.equal(pemBlocksOpened(row.text), row.opened);
    });
  }

  it('the strict block takes an upper-case label and a base64 body only, with the same label at the end', () => {
    assert.deepEqual(
      [...`${key}\n${cert('QQ==')}`.matchAll(strictPemBlock)].map(([, label, body]) => [label, body]),
      [
        ['PRIVATE KEY', 'QUJD\n'],
        ['CERTIFICATE', 'QQ==\n'],
      ],
    );
    assert.equal([...cert('not base64!').matchAll(strictPemBlock)].length, 0);
    assert.equal([...'-----BEGIN certificate-----\nQQ==\n-----END certificate-----'.matchAll(strictPemBlock)].length, 0);
    assert.equal([...'-----BEGIN CERTIFICATE-----\nQQ==\n-----END PRIVATE KEY-----'.matchAll(strictPemBlock)].length, 0);
  });
});
