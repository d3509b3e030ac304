import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { repoRoot } from './paths.ts';

/** A static HTTPS listener that answers 200 itself, reading the agent's certificate files at start (1.1-style file config). */
function fileTlsListener(port: number, withRoot: boolean): unknown {
  const tls: Record<string, unknown> = {
    tls_certificates: [{ certificate_chain: { filename: '{{ cert_dir }}/cert-chain.pem' }, private_key: { filename: '{{ cert_dir }}/key.pem' } }],
  };
  if (withRoot) tls.validation_context = { trusted_ca: { filename: '{{ cert_dir }}/root-cert.pem' } };
  return {
    name: 'file_tls',
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        transport_socket: {
          name: 'envoy.transport_sockets.tls',
          typed_config: { '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', common_tls_context: tls },
        },
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: 'file_tls',
              route_config: {
                virtual_hosts: [
                  {
                    name: 'all',
                    domains: ['*'],
                    routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'hello from a file certificate' } } }],
                  },
                ],
              },
              http_filters: [
                { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
              ],
            },
          },
        ],
      },
    ],
  };
}

/** The agent's own bootstrap template plus one static listener on `port`; returns the template's path. */
export async function writeTemplateWithListener(dir: string, port: number, options: { tls?: boolean; withRoot?: boolean } = {}): Promise<string> {
  const template = JSON.parse(await readFile(join(repoRoot, 'templates', 'envoy_bootstrap.json'), 'utf8')) as { static_resources: { listeners: unknown[] } };
  const listener = options.tls === false ? plainListener(port) : fileTlsListener(port, options.withRoot ?? true);
  template.static_resources.listeners.unshift(listener);
  const path = join(dir, 'bootstrap-template.json');
  await writeFile(path, JSON.stringify(template, null, 2));
  return path;
}

function plainListener(port: number): unknown {
  const listener = fileTlsListener(port, false) as { filter_chains: Record<string, unknown>[] };
  delete listener.filter_chains[0]!.transport_socket;
  return listener;
}

/** A key and self-signed certificate on NIST P-224: a consistent pair that Envoy (BoringSSL) refuses to load. */
export async function p224Pair(dir: string): Promise<{ cert: string; key: string }> {
  const [key, cert] = [join(dir, 'p224.key'), join(dir, 'p224.crt')];
  await execa('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-224',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '2',
    '-subj',
    '/CN=localhost',
  ]);
  return { cert: await readFile(cert, 'utf8'), key: await readFile(key, 'utf8') };
}
