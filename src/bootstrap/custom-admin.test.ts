import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { customAdmin } from './custom-admin.ts';

const json = (port: number, address = '127.0.0.1') =>
  JSON.stringify({ admin: { address: { socket_address: { address, port_value: port } } }, static_resources: {} });
const yaml = (port: number) => `admin:\n  address:\n    socket_address:\n      address: 127.0.0.1\n      port_value: ${port}\n`;
const textProto = (port: number) => `node { id: "x" }\nadmin {\n  address {\n    socket_address { address: "127.0.0.1" port_value: ${port} }\n  }\n}\n`;

const refusal = (pattern: RegExp) => (error: Error & { exitCode: number }) => pattern.test(error.message) && error.exitCode === 2;

describe('a custom bootstrap\'s admin port', () => {
  it('is the file\'s own, in JSON, YAML and text proto, when --proxyAdminPort is the default', async () => {
    for (const [path, text] of [['/b.json', json(19001)], ['/b.yaml', yaml(19001)], ['/b.pb_text', textProto(19001)]] as const) {
      assert.deepEqual(await customAdmin({ path, text, flagPort: 15000, flagGiven: false }), { port: 19001, host: '127.0.0.1' }, path);
    }
  });

  it('agrees with a given --proxyAdminPort, or is refused naming both', async () => {
    assert.equal((await customAdmin({ path: '/b.json', text: json(19001), flagPort: 19001, flagGiven: true }))?.port, 19001);
    await assert.rejects(
      customAdmin({ path: '/b.json', text: json(19001), flagPort: 15000, flagGiven: true }),
      refusal(/^--proxyAdminPort: 15000 disagrees with --customConfigFile \/b\.json, whose admin listens on port 19001/),
    );
  });

  it('must be on a TCP port the agent reaches on a loopback, which it then calls', async () => {
    assert.equal(
      await customAdmin({ path: '/b.json', text: '{"static_resources":{}}', flagPort: 15000, flagGiven: true }),
      undefined,
      'no admin: nothing to take',
    );
    await assert.rejects(
      customAdmin({ path: '/b.json', text: json(19001, '198.18.0.5'), flagPort: 15000, flagGiven: false }),
      refusal(/admin on 198\.18\.0\.5:19001: the agent reaches admin on loopback only/),
    );
    await assert.rejects(
      customAdmin({ path: '/b.json', text: '{"admin":', flagPort: 15000, flagGiven: false }),
      refusal(/^--customConfigFile: \/b\.json does not parse as JSON/),
    );
    const at = async (address: string) => customAdmin({ path: '/b.json', text: json(19002, address), flagPort: 15000, flagGiven: false });
    assert.deepEqual(await at('0.0.0.0'), { port: 19002, host: '127.0.0.1' });
    assert.deepEqual(await at('::1'), { port: 19002, host: '::1' }, 'an IPv6-only pod\'s bootstrap');
    assert.deepEqual(await at('::'), { port: 19002, host: '::1' });
    await assert.rejects(at('constructor'), refusal(/admin on constructor:19002/));
  });
});
