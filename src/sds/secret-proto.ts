import { lenField } from '../grpc/proto-wire.ts';
import { secretType } from '../discovery/type-urls.ts';
import type { SecretMaterial } from './secret-store.ts';

/**
 * Encodes the few messages the SDS server sends, straight to protobuf wire
 * bytes (field numbers from envoy/service/discovery/v3/discovery.proto and
 * envoy/extensions/transport_sockets/tls/v3/{secret,common}.proto). A tree
 * of length-delimited fields is all they are, so no protobuf runtime is loaded:
 * protobufjs costs ten times the memory and the first-use time
 * (bench/library-cost.ts; the figures are in docs/benchmarks.md).
 */

const field = lenField;

/** DataSource{inline_bytes = 2}: the bytes themselves, never a path Envoy would read. */
const inlineBytes = (bytes: Buffer) => field(2, bytes);

/** envoy.extensions.transport_sockets.tls.v3.Secret for `name`. */
export function encodeSecret(name: string, material: SecretMaterial): Buffer {
  if (material.kind === 'tls-certificate') {
    // TlsCertificate{certificate_chain = 1, private_key = 2}, Secret.tls_certificate = 2
    const tls = Buffer.concat([field(1, inlineBytes(material.chain)), field(2, inlineBytes(material.key))]);
    return Buffer.concat([field(1, name), field(2, tls)]);
  }
  // CertificateValidationContext{trusted_ca = 1}, Secret.validation_context = 4
  return Buffer.concat([field(1, name), field(4, field(1, inlineBytes(material.trustedCa)))]);
}

export interface SecretResponse {
  version: string;
  nonce: string;
  secrets: ReadonlyArray<{ name: string; material: SecretMaterial }>;
}

/** DiscoveryResponse{version_info = 1, resources = 2 (Any{type_url = 1, value = 2}), type_url = 4, nonce = 5}. */
export function encodeSecretResponse(response: SecretResponse): Buffer {
  const resources = response.secrets.map(({ name, material }) => field(2, Buffer.concat([field(1, secretType), field(2, encodeSecret(name, material))])));
  return Buffer.concat([field(1, response.version), ...resources, field(4, secretType), field(5, response.nonce)]);
}
