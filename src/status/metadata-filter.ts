// The merged page may carry a family's HELP and TYPE once only: the parts'
// repeats (Envoy's of its own or of ours, the app's of either) are dropped.

const metadataLine = /^# (HELP|TYPE) (\S+)[^\n]*(\n|$)/gm;
const metadataHead = /^# (HELP|TYPE) (\S+)/;
const newline = 0x0a;
const hash = 0x23;
/** A metadata line's kind and name are read from its first bytes only: a longer name is no Prometheus name anyone scrapes. */
const headBytes = 512;

/**
 * Remembers the HELP and TYPE lines the page has carried, and drops the
 * ones repeated after. Text parts go through `text`; a streamed part
 * (Envoy's body) through `chunk` and `end`, without copying it: only the
 * lines that start with `#` are read, and what is kept goes out as slices
 * of the chunk it came in.
 */
export class MetadataFilter {
  readonly #seen = new Set<string>();
  #partial: Buffer | undefined;

  /** A whole part: its repeats dropped, ending in a newline (or empty). */
  text(part: string): string {
    const kept = part.replace(metadataLine, (line, kind: string, name: string) => (this.#first(kind, name) ? line : ''));
    return kept === '' || kept.endsWith('\n') ? kept : `${kept}\n`;
  }

  /** The complete lines of a streamed chunk, its repeats dropped; a last line without its newline waits for the next chunk. */
  *chunk(chunk: Buffer): Generator<Buffer> {
    let from = 0;
    if (this.#partial) {
      // Only the line cut between two chunks is joined (copied); the rest goes on as slices.
      const first = chunk.indexOf(newline);
      const joined = Buffer.concat([this.#partial, first < 0 ? chunk : chunk.subarray(0, first + 1)]);
      this.#partial = first < 0 ? joined : undefined;
      if (first < 0) return;
      yield* this.#lines(joined);
      from = first + 1;
    }
    const end = Math.max(from, chunk.lastIndexOf(newline) + 1);
    if (end > from) yield* this.#lines(chunk.subarray(from, end));
    // A copy: a slice would keep the whole chunk alive until the next one.
    if (end < chunk.length) this.#partial = Buffer.from(chunk.subarray(end));
  }

  /** The end of a streamed part: its last line, if it had no newline, gets one. */
  *end(): Generator<Buffer> {
    const partial = this.#partial;
    this.#partial = undefined;
    if (partial) yield* this.#lines(Buffer.concat([partial, Buffer.from('\n')]));
  }

  /** Forgets a cut line (a stream that broke off or hit its cap): half a line is no line. */
  dropPartial(): void {
    this.#partial = undefined;
  }

  *#lines(data: Buffer): Generator<Buffer> {
    let kept = 0;
    for (let at = data[0] === hash ? 0 : nextComment(data, 0); at >= 0; at = nextComment(data, at)) {
      const end = data.indexOf(newline, at) + 1 || data.length;
      const head = metadataHead.exec(data.toString('latin1', at, Math.min(end, at + headBytes)));
      if (!head || this.#first(head[1]!, head[2]!)) continue;
      if (at > kept) yield data.subarray(kept, at);
      kept = end;
    }
    if (kept < data.length) yield data.subarray(kept);
  }

  #first(kind: string, name: string): boolean {
    const key = `${kind} ${name}`;
    if (this.#seen.has(key)) return false;
    this.#seen.add(key);
    return true;
  }
}

/** Where the next line that starts with `#` begins, after `from`; -1 when none. */
function nextComment(data: Buffer, from: number): number {
  const at = data.indexOf('\n#', from);
  return at < 0 ? -1 : at + 1;
}

/** The agent's text, then Envoy's, each family's HELP and TYPE once (the filter the page uses, on whole texts). */
export function mergePrometheus(agentText: string, envoyText: string): string {
  const filter = new MetadataFilter();
  return filter.text(agentText) + filter.text(envoyText);
}
