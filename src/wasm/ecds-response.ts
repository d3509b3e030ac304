import type { Logger } from '../shared/log.ts';
import { conversionResult, type WasmMetrics } from './metrics.ts';
import type { EcdsOutcome } from '../discovery/consumers.ts';
import type { XdsMode } from '../discovery/wire.ts';
import { extensionConfigType } from '../discovery/type-urls.ts';
import { ConvertError, fallbackFilter, parseRemoteWasm, withLocalCode } from './convert.ts';
import type { ModuleCache } from './module-cache.ts';
import { bytesOf, decodeMessage, encodeMessage, lenField, ProtoError, stringOf, withField, type ProtoField } from './proto.ts';

export interface EcdsConverterOptions {
  mode: XdsMode;
  cache: Pick<ModuleCache, 'get'>;
  logger: Logger;
  metrics?: Pick<WasmMetrics, 'conversions' | 'conversionMs'>;
}

// DiscoveryResponse and DeltaDiscoveryResponse: resources 2, nonce 5. Any: type_url 1, value 2. Delta Resource: resource 2.
const responseResources = 2;
const responseNonce = 5;

/**
 * One whole ECDS response: each remote Wasm filter fetched and pointed at
 * its local file, or replaced by an RBAC fallback when it cannot be had.
 * The response is re-encoded only when some resource changed; a resource
 * that cannot be read at all is a NACK, as with Istio's agent.
 */
export async function convertEcdsResponse(message: Buffer, options: EcdsConverterOptions): Promise<EcdsOutcome> {
  let fields: ProtoField[];
  try {
    fields = decodeMessage(message);
  } catch (error) {
    return { nack: `malformed ECDS response: ${(error as Error).message}`, nonce: '' };
  }
  const nonce = stringOf(fields, responseNonce) ?? '';
  let changed = false;
  const errors: string[] = [];
  const converted = await Promise.all(fields.map(async (field) => {
    if (field.number !== responseResources || field.wireType !== 2) return field;
    try {
      const value = await convertResource(field.value, options);
      if (!value) return field;
      changed = true;
      return lenField(responseResources, value);
    } catch (error) {
      errors.push((error as Error).message);
      return field;
    }
  }));
  if (errors.length) return { nack: errors.join('; '), nonce };
  return { message: changed ? encodeMessage(converted) : undefined };
}

/** A SotW Any, or a Delta Resource wrapping one: the rewritten bytes, or undefined when unchanged. */
async function convertResource(resource: Buffer, options: EcdsConverterOptions): Promise<Buffer | undefined> {
  const outer = decodeMessage(resource);
  if (options.mode === 'delta') {
    const any = bytesOf(outer, 2);
    if (!any) return undefined;
    const value = await convertAny(any, options);
    return value && encodeMessage(withField(outer, 2, lenField(2, value)));
  }
  return convertAny(resource, options);
}

async function convertAny(anyBytes: Buffer, options: EcdsConverterOptions): Promise<Buffer | undefined> {
  const any = decodeMessage(anyBytes);
  if (stringOf(any, 1) !== extensionConfigType) return undefined;
  const extension = await convertExtension(bytesOf(any, 2) ?? Buffer.alloc(0), options);
  return extension && encodeMessage(withField(any, 2, lenField(2, extension)));
}

async function convertExtension(bytes: Buffer, { cache, logger, metrics }: EcdsConverterOptions): Promise<Buffer | undefined> {
  const started = performance.now();
  const counted = (result: string) => {
    metrics?.conversions.inc({ result });
    metrics?.conversionMs.observe({}, performance.now() - started);
  };
  const parsed = parseOrRefuse(bytes, counted);
  if (!parsed) return (counted(conversionResult.noRemoteLoad), undefined);
  try {
    if (!parsed.url) throw new Error('the remote code has no http_uri');
    // istiod names a secret it could not read with an empty value: pulling anonymously would hide that.
    if (parsed.pullSecret === '') throw new Error('the image pull secret is missing');
    const { url, sha256: checksum, name: resourceName, resourceVersion, pullPolicy, pullSecret, timeoutMs } = parsed;
    const path = await cache.get({ url, checksum, resourceName, resourceVersion, pullPolicy, pullSecret, timeoutMs });
    const ms = Math.round(performance.now() - started);
    logger.info({ filter: parsed.name, url, path, ms }, 'Wasm module ready; Envoy gets it as a local file');
    counted(conversionResult.success);
    return withLocalCode(parsed, path);
  } catch (error) {
    counted(conversionResult.fetchFailure);
    const fallback = parsed.failOpen ? 'allow-all' : 'deny-all';
    logger.error({ filter: parsed.name, url: parsed.url, err: error, fallback }, `Wasm module not fetched; Envoy gets a ${fallback} RBAC filter instead`);
    return fallbackFilter(parsed.name, parsed.kind, parsed.failOpen);
  }
}

/** A resource that is not a TypedExtensionConfig is a NACK (ConvertError), counted as an unmarshal failure. */
function parseOrRefuse(bytes: Buffer, counted: (result: string) => void): ReturnType<typeof parseRemoteWasm> {
  try {
    return parseRemoteWasm(bytes);
  } catch (error) {
    if (!(error instanceof ProtoError)) throw error;
    counted(conversionResult.unmarshalFailure);
    throw new ConvertError(`ECDS resource is not a TypedExtensionConfig: ${error.message}`);
  }
}
