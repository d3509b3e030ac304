import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

const wasmMagic = Buffer.from([0x00, 0x61, 0x73, 0x6d]);
const inflate = promisify(gunzip);

export const isWasm = (bytes: Buffer) => bytes.length >= 8 && bytes.subarray(0, 4).equals(wasmMagic);

const isGzip = (bytes: Buffer) => bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
const isTar = (bytes: Buffer) => bytes.length > 262 && bytes.toString('latin1', 257, 262) === 'ustar';

/** The first file of a tar: a 512-byte header whose size is octal at 124. */
function firstTarFile(bytes: Buffer): Buffer | undefined {
  const size = Number.parseInt(bytes.toString('latin1', 124, 136).replace(/\0.*$/, '').trim(), 8);
  if (!Number.isFinite(size) || 512 + size > bytes.length) return undefined;
  return bytes.subarray(512, 512 + size);
}

/**
 * Gunzip on libuv's thread pool, never on the event loop, and never past
 * `maxBytes`: a gzip bomb is refused, not inflated, and the agent keeps
 * answering probes and xDS meanwhile.
 */
async function gunzipBounded(bytes: Buffer, maxBytes: number): Promise<Buffer | undefined> {
  try {
    return await inflate(bytes, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new Error(`the module inflates past ${maxBytes} bytes (ISTIO_WASM_MAX_BINARY_SIZE_BYTES)`);
    return undefined;
  }
}

/**
 * The module inside gzip and tar wrappings (image layers, `.wasm.gz`), as
 * Istio unwraps them: best effort, the bytes as they were when a step fails,
 * but an error when a gzip layer inflates past `maxBytes`.
 */
export async function unbox(bytes: Buffer, maxBytes: number): Promise<Buffer> {
  let current = bytes;
  for (let depth = 0; depth < 4 && !isWasm(current); depth++) {
    let next: Buffer | undefined;
    if (isGzip(current)) next = await gunzipBounded(current, maxBytes);
    else if (isTar(current)) next = firstTarFile(current);
    if (!next) return bytes;
    current = next;
  }
  return current;
}
