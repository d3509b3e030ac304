import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertGone } from '../support/agent.ts';
import type { PeerEvent } from '../support/peer.ts';
import { identity, issuedSerials, startCaRig, type CaRig, type CaRigOptions } from '../support/ca-rig.ts';
import { pollUntil } from '../support/poll.ts';

/**
 * No mounted certificates: the CA peer issues the workload certificate, and
 * the xDS peer stands in for istiod's 15012 (TLS for istiod's name, the token
 * required, client certificates checked against the CA's root). New
 * connections present the certificate the agent holds, in memory.
 */
describe('xDS to istiod\'s 15012 with the workload certificate from the CA', () => {
  async function withRig(options: CaRigOptions, check: (rig: CaRig) => Promise<void>): Promise<void> {
    const rig = await startCaRig(options);
    try {
      await check(rig);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  }

  const handshakes = (rig: CaRig) => rig.peer.log.entries.filter((entry) => entry.event === 'tls_handshake');
  const handshake = (rig: CaRig, match: (entry: PeerEvent) => boolean, what: string) =>
    rig.peer.log.waitFor((entry) => entry.event === 'tls_handshake' && match(entry), 30_000, what);
  const connected = (rig: CaRig, credential: string) =>
    rig.agent.log.waitFor(
      (entry) => entry.msg === 'connected to the discovery server' && entry.credential === credential,
      30_000,
      `a connection with ${credential}`,
    );
  const streamEnded = (rig: CaRig, pattern: RegExp) =>
    rig.agent.log.waitFor((entry) => entry.msg === 'xDS stream ended' && pattern.test(String(entry.details)), 30_000, `a stream ending with ${pattern}`);

  /** /debug/xds names each stream's credential; connections are cut every 2 s, so one shows it soon. */
  async function streamCredentialShown(rig: CaRig, credential: string): Promise<void> {
    const streams = async () =>
      (
        (await (await fetch(`http://127.0.0.1:${rig.statusPort}/debug/xds`, { signal: AbortSignal.timeout(5000) })).json()) as {
          streams: { credential?: string }[];
        }
      ).streams;
    const what = `a stream in /debug/xds with credential ${credential}`;
    await pollUntil(streams, { what, timeoutMs: 30_000, intervalMs: 200, accept: (shown) => shown.some((stream) => stream.credential === credential) });
  }

  it('connects with the token first, presents the certificate once held, and the renewed one on the next connection', { timeout: 120_000 }, async () => {
    // The CA refuses until the token-only connection is seen; then 8 s certificates renewed at 20% of their life.
    const options: CaRigOptions = {
      ttlSeconds: 8,
      env: { SECRET_GRACE_PERIOD_RATIO: '0.8' },
      initialMode: { refuse: 'not yet' },
      xdsTls: { clientCert: 'optional', maxConnectionAge: '2s' },
    };
    await withRig(options, async (rig) => {
      await handshake(rig, (entry) => entry.spiffe === '', 'a token-only handshake before the CA answers');
      await connected(rig, 'token');
      await rig.ca.setMode({});
      const first = await handshake(rig, (entry) => entry.spiffe === identity, 'a handshake presenting the workload certificate');
      await connected(rig, 'certificate+token');
      await streamCredentialShown(rig, 'certificate+token');
      await handshake(rig, (entry) => entry.spiffe === identity && entry.serial !== first.serial, 'a handshake presenting a renewed certificate');
      const presented = new Set(handshakes(rig).map((entry) => String(entry.serial)).filter(Boolean));
      assert.deepEqual([...presented].filter((serial) => !issuedSerials(rig).includes(serial)), [], 'only certificates the CA issued were presented');
      assert.ok(!rig.peer.log.entries.some((entry) => entry.event === 'token_refused'), 'the token went along every time');
      const metrics = await (await fetch(`http://127.0.0.1:${rig.statusPort}/stats/prometheus`)).text();
      assert.match(metrics, /istio_agent_xds_proxy_upstream_dials_total\{credential="token",result="connected"\} [1-9]/);
      assert.match(metrics, /istio_agent_xds_proxy_upstream_dials_total\{credential="certificate\+token",result="connected"\} [1-9]/);
      assert.ok(!rig.agent.log.entries.some((entry) => /PRIVATE KEY/.test(JSON.stringify(entry))), 'no key in the log');
    });
  });

  it('a server that requires a client certificate: refused while none is held, with a line saying so, then accepted', { timeout: 90_000 }, async () => {
    await withRig({ initialMode: { refuse: 'not yet' }, xdsTls: { clientCert: 'required' } }, async (rig) => {
      await streamEnded(rig, /wants a client certificate and the agent holds none yet/);
      await rig.ca.setMode({});
      await handshake(rig, (entry) => entry.spiffe === identity, 'a handshake presenting the workload certificate');
      await connected(rig, 'certificate+token');
    });
  });

  it('a server that does not trust the CA\'s root refuses the certificate: a line naming it, a metric, then the token alone', { timeout: 90_000 }, async () => {
    // Long-lived certificates: no renewal brings a new one to present while the test runs. The peer
    // closes connections after 2 s: the first dial may beat the CA (an RSA key takes a while), the next presents it.
    await withRig({ ttlSeconds: 3600, xdsTls: { clientCert: 'optional', otherClientCa: true, maxConnectionAge: '2s' } }, async (rig) => {
      const line = await rig.agent.log.waitFor(
        (entry) => entry.msg === 'the discovery server refused our client certificate',
        30_000,
        'the refused-certificate line',
      );
      assert.equal(line.credential, 'certificate+token');
      // The Envoy stream whose dial was refused ends with the reason, or, once a config is kept, is served from it with that reason.
      const refused = /^cannot reach the discovery server: TLS: the discovery server refused our client certificate/;
      await rig.agent.log.waitFor(
        (entry) =>
          (entry.msg === 'xDS stream ended' && refused.test(String(entry.details))) ||
          (entry.msg === 'serving last-known-good config: the discovery server cannot be reached' && refused.test(String(entry.reason))),
        30_000,
        `a stream ending with, or served from kept config because of, ${refused}`,
      );
      const refusedAt = rig.agent.log.entries.indexOf(line);
      await rig.agent.log.waitFor(
        (entry) => entry.msg === 'connected to the discovery server' && entry.credential === 'token',
        30_000,
        'a token-only connection after the refusal',
        refusedAt,
      );
      await handshake(rig, (entry) => entry.spiffe === '', 'a token-only handshake');
      const metrics = await (await fetch(`http://127.0.0.1:${rig.statusPort}/stats/prometheus`)).text();
      assert.match(metrics, /istio_agent_xds_proxy_upstream_dials_total\{credential="certificate\+token",result="certificate_refused"\} [1-9]/);
    });
  });

  it('a root istiod\'s certificate does not chain to still ends in the line naming TLS and the root', { timeout: 90_000 }, async () => {
    await withRig({ xdsTls: { clientCert: 'optional', wrongXdsRoot: true } }, async (rig) => {
      const line = await streamEnded(rig, /^cannot reach the discovery server: TLS: the discovery server's certificate is not trusted/);
      assert.match(String(line.details), /xds-root\.pem/);
    });
  });
});
