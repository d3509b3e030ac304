/** Limits on one metadata value: istiod's own metadata is a few KiB, four levels deep. */
export const jsonLimits = { maxBytes: 256 * 1024, maxDepth: 64 } as const;

export type JsonResult = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * JSON.parse behind a size and nesting bound. A value nested thousands deep
 * parses, but later stringifying it into the bootstrap overflows the stack;
 * refusing it here lets the error name the variable.
 */
export function parseBoundedJson(text: string, limits: { maxBytes: number; maxDepth: number } = jsonLimits): JsonResult {
  if (Buffer.byteLength(text) > limits.maxBytes) return { ok: false, reason: `is larger than ${limits.maxBytes} bytes` };
  const depth = nestingDepth(text);
  if (depth > limits.maxDepth) return { ok: false, reason: `nests deeper than ${limits.maxDepth} levels` };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, reason: `is not valid JSON (${(error as Error).message})` };
  }
}

/** The deepest bracket nesting outside strings; malformed text is left to JSON.parse. */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') max = Math.max(max, ++depth);
    else if (char === '}' || char === ']') depth--;
  }
  return max;
}
