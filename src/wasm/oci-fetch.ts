import { createHash } from 'node:crypto';
import { spokePlainHttp, type HttpAnswer, type HttpGetOptions } from './http-get.ts';
import { refusedRealm } from './ssrf.ts';

/**
 * A small OCI distribution client (manifest, then one blob, bearer or basic
 * auth), written on node:http rather than taken from npm: the registry
 * clients there pull in whole SDKs or bring their own HTTP stacks, and this
 * one must connect through the SSRF-checked lookup of http-get.ts on every
 * hop, the token request included. It is about a hundred lines.
 */
export interface OciReference {
  registry: string;
  repository: string;
  /** A tag, or a digest `sha256:<hex>`. */
  reference: string;
}

export const wasmLayerType = 'application/vnd.module.wasm.content.layer.v1+wasm';
const manifestTypes = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];

/** `oci://registry[:port]/repo[:tag|@sha256:hex]`; the tag defaults to latest. */
export function parseOciUrl(url: string): OciReference {
  const rest = url.replace(/^oci:\/\//, '');
  const slash = rest.indexOf('/');
  if (slash <= 0) throw new Error(`${url}: an OCI reference needs a registry and a repository`);
  const registry = rest.slice(0, slash);
  let path = rest.slice(slash + 1);
  let reference = 'latest';
  const at = path.indexOf('@');
  if (at !== -1) [path, reference] = [path.slice(0, at), path.slice(at + 1)];
  else {
    const colon = path.lastIndexOf(':');
    if (colon !== -1) [path, reference] = [path.slice(0, colon), path.slice(colon + 1)];
  }
  if (!/^[a-z0-9]+(?:[._\-/][a-z0-9]+)*$/.test(path)) throw new Error(`${url}: repository ${JSON.stringify(path)} is not a valid OCI name`);
  return { registry, repository: path, reference };
}

/** user:password for `registry` from a docker config JSON (a pull secret), when it has them. */
export function credentialsFor(pullSecret: string | undefined, registry: string): string | undefined {
  if (!pullSecret) return undefined;
  let config: { auths?: Record<string, { auth?: string; username?: string; password?: string }> };
  try {
    config = JSON.parse(pullSecret);
  } catch {
    throw new Error('the image pull secret is not JSON (a docker config is expected)');
  }
  const auths = config?.auths ?? (config as Record<string, never>);
  const entry = Object.entries(auths ?? {}).find(([key]) => key.replace(/^https?:\/\//, '').replace(/\/.*$/, '') === registry)?.[1];
  if (!entry) return undefined;
  if (entry.auth) return Buffer.from(entry.auth, 'base64').toString('utf8');
  return entry.username !== undefined ? `${entry.username}:${entry.password ?? ''}` : undefined;
}

export interface OciFetchOptions {
  pullSecret?: string;
  insecure: boolean;
  /** One request, retried as the caller decides. */
  get(url: string, options: Omit<HttpGetOptions, 'timeoutMs' | 'maxBytes'>): Promise<HttpAnswer>;
  /** Why a token realm is refused; Istio's rule (ssrf.ts) unless a test needs a loopback token server. */
  refusedRealm?: (realm: string) => string | undefined;
}

export interface PreparedImage {
  /** Hex sha256 of the manifest: what a WasmPlugin's sha256 names. */
  manifestDigest: string;
  /** Downloads the module's layer and checks it against the manifest. */
  module(): Promise<Buffer>;
}

interface Session {
  base: string;
  authorization?: string;
}

/** Reads the manifest (learning the scheme and the token on the way); the blob waits until the digest is judged. */
export async function prepareOci(url: string, options: OciFetchOptions): Promise<PreparedImage> {
  const ref = parseOciUrl(url);
  const session: Session = { base: `https://${ref.registry}` };
  const manifestUrl = () => `${session.base}/v2/${ref.repository}/manifests/${ref.reference}`;
  let answer: HttpAnswer;
  try {
    answer = await authorizedGet(manifestUrl, { accept: manifestTypes.join(', ') }, session, ref, options);
  } catch (error) {
    if (!spokePlainHttp(error)) throw error;
    // As Istio: a registry that answers HTTPS with HTTP is asked again over HTTP.
    session.base = `http://${ref.registry}`;
    answer = await authorizedGet(manifestUrl, { accept: manifestTypes.join(', ') }, session, ref, options);
  }
  if (answer.status !== 200) throw new Error(`manifest ${url}: HTTP ${answer.status}`);
  const manifestDigest = createHash('sha256').update(answer.body).digest('hex');
  const layer = pickLayer(answer.body, url);
  return {
    manifestDigest,
    module: async () => {
      const blob = await authorizedGet(() => `${session.base}/v2/${ref.repository}/blobs/${layer.digest}`, {}, session, ref, options);
      if (blob.status !== 200) throw new Error(`blob ${layer.digest} of ${url}: HTTP ${blob.status}`);
      const actual = `sha256:${createHash('sha256').update(blob.body).digest('hex')}`;
      if (actual !== layer.digest) throw new Error(`blob of ${url} has digest ${actual}, not the manifest's ${layer.digest}`);
      return blob.body;
    },
  };
}

/** The Wasm artifact layer when there is one, else the last layer (the compat image variant). */
function pickLayer(body: Buffer, url: string): { digest: string; mediaType?: string } {
  let manifest: { layers?: { digest?: string; mediaType?: string }[] };
  try {
    manifest = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error(`manifest of ${url} is not JSON`);
  }
  const layers = (manifest.layers ?? []).filter((layer) => typeof layer.digest === 'string' && /^sha256:[0-9a-f]{64}$/.test(layer.digest));
  const layer = layers.find((candidate) => candidate.mediaType === wasmLayerType) ?? layers.at(-1);
  if (!layer) throw new Error(`manifest of ${url} has no layer`);
  return layer as { digest: string; mediaType?: string };
}

/** A GET that answers a 401 challenge once: a bearer token from the realm, or basic auth. */
async function authorizedGet(
  url: () => string,
  headers: Record<string, string>,
  session: Session,
  ref: OciReference,
  options: OciFetchOptions,
): Promise<HttpAnswer> {
  const send = () =>
    options.get(url(), { insecure: options.insecure, headers: { ...headers, ...(session.authorization ? { authorization: session.authorization } : {}) } });
  const answer = await send();
  if (answer.status !== 401) return answer;
  const challenge = String(answer.headers['www-authenticate'] ?? '');
  const credentials = credentialsFor(options.pullSecret, ref.registry);
  if (/^basic/i.test(challenge)) {
    if (!credentials) return answer;
    session.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
  } else if (/^bearer/i.test(challenge)) {
    session.authorization = `Bearer ${await bearerToken(challenge, credentials, ref, options)}`;
  } else return answer;
  return send();
}

function challengeParams(challenge: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [, key, value] of challenge.matchAll(/(\w+)="([^"]*)"/g)) params[key!.toLowerCase()] = value!;
  return params;
}

async function bearerToken(challenge: string, credentials: string | undefined, ref: OciReference, options: OciFetchOptions): Promise<string> {
  const params = challengeParams(challenge);
  const realm = params.realm ?? '';
  const refused = (options.refusedRealm ?? refusedRealm)(realm);
  if (refused) throw new Error(`registry ${ref.registry}: ${refused}`);
  const tokenUrl = new URL(realm);
  if (params.service) tokenUrl.searchParams.set('service', params.service);
  tokenUrl.searchParams.set('scope', params.scope ?? `repository:${ref.repository}:pull`);
  const headers: Record<string, string> = credentials ? { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` } : {};
  const answer = await options.get(tokenUrl.toString(), { insecure: options.insecure, headers });
  if (answer.status !== 200) throw new Error(`token from ${tokenUrl.origin}${tokenUrl.pathname}: HTTP ${answer.status}`);
  const body = JSON.parse(answer.body.toString('utf8')) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (!token) throw new Error(`token from ${tokenUrl.origin}${tokenUrl.pathname}: the answer has no token`);
  return token;
}
