import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { customAdminPort } from './custom-admin.ts';

const json = (port: number, address = '127.0.0.1') =>
  JSON.stringify({ admin: { address: { socket_address: { address, port_value: port } } }, static_resources: {} });
const yaml = (port: number) => `admin:\n  address:\n    socket_address:\n      address: 127.0.0.1\n      port_value: ${port}\n`;
const textProto = (port: number) => `node { id: "x" }\nadmin {\n  address {\n    socket_address { address: "127.0.0.1" port_value: ${port} }\n  }\n}\n`;

const refusal = (pattern: RegExp) => (error: Error & { exitCode: number }) => pattern.test(error.message) && error.exitCode === 2;

describe('a custom bootstrap\'s admin port', () => {
  it('is the file\'s own, in JSON, YAML and text proto, when --proxyAdminPort is the default', async () => {
    for (const [path, text] of [['/b.json', json(19001)], ['/b.yaml', yaml(19001)], ['/b.pb_text', textProto(19001)]] as const) {
      assert.equal(await customAdminPort({ path, text, flagPort: 15000, flagGiven: false }), 19001, path);
    }
  });

  it('agrees with a given --proxyAdminPort, or is refused naming both', async () => {
    assert.equal(await customAdminPort({ path: '/b.json', text: json(19001), flagPort: 19001, flagGiven: true }), 19001);
    await assert.rejects(
      customAdminPort({ path: '/b.json', text: json(19001), flagPort: 15000, flagGiven: true }),
      refusal(/^--proxyAdminPort: 15000 disagrees with --customConfigFile \/b\.json, whose admin listens on port 19001/),
    );
  });

  it('must be on a TCP port the agent reaches on 127.0.0.1', async () => {
    assert.equal(
      await customAdminPort({ path: '/b.json', text: '{"static_resources":{}}', flagPort: 15000, flagGiven: true }),
      undefined,
      'no admin: nothing to take',
    );
    await assert.rejects(
      customAdminPort({ path: '/b.json', text: json(19001, '10.0.0.5'), flagPort: 15000, flagGiven: false }),
      refusal(/admin on 10\.0\.0\.5:19001: the agent reaches admin on 127\.0\.0\.1 only/),
    );
    await assert.rejects(
      customAdminPort({ path: '/b.json', text: '{"admin":', flagPort: 15000, flagGiven: false }),
      refusal(/^--customConfigFile: \/b\.json does not parse as JSON/),
    );
    assert.equal(await customAdminPort({ path: '/b.json', text: json(19002, '0.0.0.0'), flagPort: 15000, flagGiven: false }), 19002);
  });
});
