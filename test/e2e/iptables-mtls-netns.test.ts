/**
 * Issue 20's critical finding, end to end: in a dual-stack pod captured with
 * the injection template's arguments and ISTIO_DUAL_STACK=true, a real Envoy
 * (as the proxy user) listens on 15006 and admits only mTLS with the mesh's
 * root, as STRICT mTLS does. From the pod network, a plaintext connection to
 * every port of the pod, SSH's 22 included, over IPv4 and IPv6, never gets
 * an answer from the app; an mTLS connection to 22 is passed to the app.
 * The same with the rules written as iptables and as native nftables.
 */
import assert from 'node:assert/strict';
import { chmod, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa, type ResultPromise } from 'execa';
import { assertGone } from '../support/agent.ts';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { writeTestCerts } from '../support/certs.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { envoyBin } from '../support/paths.ts';
import { iptablesSkipReason, makePodPair, proxyUid, runIptables, startListener, templateArgs, v4, v6, type PodPair } from '../support/iptables-pods.ts';
import { nftSkipReason } from '../support/nft-pods.ts';

const iptablesSkip = (await iptablesSkipReason()) ?? false;
const nftSkip = (await nftSkipReason()) ?? false;

const appPorts = [22, 80, 443, 3306, 8080, 9090];

/** Envoy's inbound: TLS with a client certificate from the root, passed to the original destination from 127.0.0.6. */
function envoyConfig(dir: string): string {
  const file = (name: string) => JSON.stringify(join(dir, name));
  return `
static_resources:
  listeners:
  - name: inbound
    address: { socket_address: { address: "::", port_value: 15006, ipv4_compat: true } }
    listener_filters_timeout: 2s
    listener_filters:
    - name: envoy.filters.listener.original_dst
      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst }
    - name: envoy.filters.listener.tls_inspector
      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector }
    filter_chains:
    - filter_chain_match: { transport_protocol: tls }
      transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
          require_client_certificate: true
          common_tls_context:
            tls_certificates: [{ certificate_chain: { filename: ${file('cert-chain.pem')} }, private_key: { filename: ${file('key.pem')} } }]
            validation_context: { trusted_ca: { filename: ${file('root-cert.pem')} } }
      filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: inbound, cluster: passthrough }
  clusters:
  - name: passthrough
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    connect_timeout: 2s
    upstream_bind_config: { source_address: { address: 127.0.0.6, port_value: 0 } }
`;
}

/**
 * Connects to each port, speaks first (as an HTTP client would), and prints
 * "port answer": the app's line, or closed/reset/refused/timeout. With a
 * certificate directory, speaks mTLS instead.
 */
const clientScript = `
import socket, ssl, sys
host, certs, ports = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
for port in ports:
    try:
        with socket.create_connection((host, port), timeout=5) as raw:
            raw.settimeout(5)
            sock = raw
            if certs != '-':
                context = ssl.create_default_context(cafile=certs + '/root-cert.pem')
                context.check_hostname = False
                context.load_cert_chain(certs + '/cert-chain.pem', certs + '/key.pem')
                sock = context.wrap_socket(raw)
            sock.sendall(b'GET / HTTP/1.1\\r\\nHost: pod\\r\\n\\r\\n')
            answer = sock.makefile().readline().strip() or 'closed'
    except ConnectionRefusedError:
        answer = 'refused'
    except (ConnectionResetError, ssl.SSLError):
        answer = 'reset'
    except (socket.timeout, TimeoutError):
        answer = 'timeout'
    print(port, answer, flush=True)
`;

async function probe(pair: PodPair, host: string, ports: number[], certs = '-'): Promise<Map<number, string>> {
  const result = await execa('ip', ['netns', 'exec', pair.peerNs, pair.python, '-c', clientScript, host, certs, ...ports.map(String)], { timeout: 120_000 });
  return new Map(result.stdout.split('\n').filter(Boolean).map((line) => {
    const [port, ...answer] = line.split(' ');
    return [Number(port), answer.join(' ')] as const;
  }));
}

for (const mode of [
  { label: 'mtls', name: 'iptables', args: [] as string[], skip: iptablesSkip },
  { label: 'mtlsnft', name: 'native nftables', args: ['--native-nftables'], skip: nftSkip },
]) {
  const skip = mode.skip;
  describe(`plaintext from the pod network never reaches an app port when the inbound listener enforces mTLS (${mode.name})`, { timeout: 180_000 }, () => {
    const cleanup = suiteCleanup();
    let pair: PodPair;
    let certs: string;

    it('sets up the capture, the app and Envoy', { skip }, async () => {
      assertBundleFresh();
      pair = await makePodPair(cleanup, mode.label, { v4: true, v6: true });
      const applied = await runIptables(pair.appNs, [...templateArgs, ...mode.args], { env: { ISTIO_DUAL_STACK: 'true' } });
      assert.equal(applied.exitCode, 0, applied.stderr);
      await startListener(cleanup, pair, pair.appNs, 'app', appPorts, true);
      certs = await tempDir(cleanup, 'pa-ipt-mtls-');
      await writeTestCerts(certs, 'pod');
      await writeFile(join(certs, 'envoy.yaml'), envoyConfig(certs));
      // Envoy runs as the proxy user, as in the pod.
      await chmod(certs, 0o755);
      for (const name of await readdir(certs)) await chmod(join(certs, name), 0o644);
      const envoy: ResultPromise = execa(
        'ip',
        [
          'netns',
          'exec',
          pair.appNs,
          'setpriv',
          `--reuid=${proxyUid}`,
          `--regid=${proxyUid}`,
          '--clear-groups',
          envoyBin,
          '-c',
          join(certs, 'envoy.yaml'),
          '--disable-hot-restart',
          '-l',
          'info',
        ],
        { reject: false, all: true },
      );
      cleanup.defer(async () => {
        envoy.kill('SIGTERM');
        await envoy;
        await assertGone(envoy.pid === undefined ? [] : [envoy.pid]);
      });
      const started = new Promise<void>((resolve, reject) => {
        envoy.all?.on('data', (chunk: Buffer) => /starting main dispatch loop/.test(String(chunk)) && resolve());
        void envoy.then((result) => reject(new Error(`envoy exited (${result.exitCode}): ${result.all}`)));
      });
      await started;
    });

    it('answers mTLS to port 22 with the app behind it (so the listener is the one that decides)', { skip }, async () => {
      assert.match((await probe(pair, v4.app, [22], certs)).get(22)!, /^app 22 /);
    });

    for (const [family, address] of [['IPv4', v4.app], ['IPv6', v6.app]] as const) {
      it(`closes plaintext to every port over ${family}, 22 included, without a word from the app`, { skip }, async () => {
        const ports = [...appPorts, 7777];
        const answers = await probe(pair, address, ports);
        const leaked = ports.filter((port) => /^app /.test(answers.get(port) ?? ''));
        assert.deepEqual(leaked, [], `the app answered plaintext: ${JSON.stringify([...answers])}`);
        for (const port of ports) assert.match(answers.get(port)!, /^(closed|reset)$/, `port ${port}`);
      });
    }
  });
}
