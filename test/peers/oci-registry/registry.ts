import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A small OCI distribution registry for tests (the read side: /v2/,
 * manifests by tag or digest, blobs), on loopback, plain HTTP unless given
 * a certificate: the agent asks over HTTPS first and falls back, as Istio's does. With `auth`, it
 * answers 401 with a bearer challenge whose realm is its own /token, which
 * takes basic auth; realmHost lets a test name the realm another way.
 */
export interface OciImage {
  repository: string;
  tag: string;
  /** The layer's bytes (a .wasm), stored under the Wasm artifact media type. */
  module: Buffer;
}

export interface OciRegistryOptions {
  images: OciImage[];
  auth?: { user: string; password: string };
  /** Serve HTTPS with this certificate (for localhost / 127.0.0.1) instead of plain HTTP. */
  tls?: { cert: string; key: string };
}

export interface OciRegistry {
  /** host:port */
  host: string;
  /** Hex sha256 of an image's manifest: what a WasmPlugin's sha256 names. */
  manifestDigest(repository: string, tag: string): string;
  /** Every request's method and path, in order. */
  requests: string[];
  close(): Promise<void>;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const manifestType = 'application/vnd.oci.image.manifest.v1+json';

export async function startOciRegistry(options: OciRegistryOptions): Promise<OciRegistry> {
  const blobs = new Map<string, Buffer>();
  const manifests = new Map<string, Buffer>();
  for (const image of options.images) {
    const config = Buffer.from('{}');
    blobs.set(`sha256:${sha256(config)}`, config);
    blobs.set(`sha256:${sha256(image.module)}`, image.module);
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: manifestType,
      config: { mediaType: 'application/vnd.module.wasm.config.v1+json', digest: `sha256:${sha256(config)}`, size: config.length },
      layers: [{ mediaType: 'application/vnd.module.wasm.content.layer.v1+wasm', digest: `sha256:${sha256(image.module)}`, size: image.module.length }],
    }));
    manifests.set(`${image.repository}:${image.tag}`, manifest);
    manifests.set(`${image.repository}@sha256:${sha256(manifest)}`, manifest);
  }
  const token = randomBytes(16).toString('hex');
  const requests: string[] = [];
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    requests.push(`${request.method} ${request.url}`);
    serve(request, response);
  };
  const server = options.tls ? createTlsServer(options.tls, handler) : createServer(handler);
  const basic = options.auth && `Basic ${Buffer.from(`${options.auth.user}:${options.auth.password}`).toString('base64')}`;

  function serve(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://registry');
    if (url.pathname === '/token') {
      if (request.headers.authorization !== basic) return void response.writeHead(401).end();
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token }));
    }
    if (options.auth && request.headers.authorization !== `Bearer ${token}`) {
      const realm = `${options.tls ? 'https' : 'http'}://${request.headers.host}/token`;
      return void response.writeHead(401, { 'www-authenticate': `Bearer realm="${realm}",service="test-registry",scope="repository:wasm:pull"` }).end();
    }
    if (url.pathname === '/v2/') return void response.writeHead(200).end('{}');
    const match = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(url.pathname);
    if (!match) return void response.writeHead(404).end();
    const [, repository, kind, reference] = match as unknown as [string, string, string, string];
    const body = kind === 'blobs' ? blobs.get(reference) : manifests.get(`${repository}${reference.startsWith('sha256:') ? '@' : ':'}${reference}`);
    if (!body) return void response.writeHead(404).end();
    const headers =
      kind === 'manifests'
        ? { 'content-type': manifestType, 'docker-content-digest': `sha256:${sha256(body)}` }
        : { 'content-type': 'application/octet-stream' };
    response.writeHead(200, { ...headers, 'content-length': body.length }).end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    manifestDigest: (repository, tag) => sha256(manifests.get(`${repository}:${tag}`)!),
    requests,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
