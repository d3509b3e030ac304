import type { Logger } from '../shared/log.ts';

const envoyLine = /^\[[^\]]+\]\[\d+\]\[(\w+)\]\[([\w-]+)\]\s*(?:\[[^\]]+\]\s*)?(.*)$/;

const levels: Record<string, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warning: 'warn',
  error: 'error',
  critical: 'fatal',
};

/** Keeps the last few warning-or-worse lines, to say why an epoch failed. */
export class RecentErrors {
  readonly #lines: string[] = [];
  readonly #size: number;

  constructor(size = 5) {
    this.#size = size;
  }

  add(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > this.#size) this.#lines.shift();
  }

  includes(text: string): boolean {
    return this.#lines.some((line) => line.includes(text));
  }

  /** The last line matching `pattern`, if any. */
  find(pattern: RegExp): string | undefined {
    return this.#lines.findLast((line) => pattern.test(line));
  }

  toString(): string {
    return this.#lines.join(' | ');
  }
}

/** Takes a line that is not Envoy's log as it is (true), or leaves it to the log (false). */
export type RawLine = (line: string) => boolean;

/**
 * Carries Envoy's output into the agent's log, one entry per line, at
 * Envoy's own level, tagged with the epoch by the logger passed in. A line
 * that is not Envoy's log is offered to `raw` first (an access log to
 * /dev/stderr stays the line Envoy wrote, as with Istio's agent).
 */
export async function forwardOutput(lines: AsyncIterable<string>, logger: Logger, recent: RecentErrors, raw?: RawLine): Promise<void> {
  try {
    for await (const line of lines) forwardLine(line, logger, recent, raw);
  } catch {
    // The child's failure is its result's business (exit code, signal), not the log forwarder's.
  }
}

function forwardLine(line: string, logger: Logger, recent: RecentErrors, raw: RawLine | undefined): void {
  const parsed = parseJsonLine(line) ?? parseTextLine(line);
  const level = (parsed && levels[parsed.level]) ?? 'info';
  const message = parsed ? parsed.message : line;
  // Unformatted lines are what Envoy prints outside its logger when it
  // gives up (e.g. "previous envoy process is still initializing"): keep them.
  if (!parsed || level === 'warn' || level === 'error' || level === 'fatal') recent.add(message);
  if (!parsed && raw?.(line)) return;
  logger[level]({ envoyComponent: parsed?.component, ...(parsed?.caller ? { caller: parsed.caller } : {}) }, message);
}

interface EnvoyLine {
  level: string;
  component: string;
  message: string;
  caller?: string;
}

function parseTextLine(line: string): EnvoyLine | undefined {
  const match = envoyLine.exec(line);
  return match ? { level: match[1]!, component: match[2]!, message: match[3]! } : undefined;
}

/** Istio's JSON format (application_log_config with --log_as_json): a message with newlines stays one entry. */
function parseJsonLine(line: string): EnvoyLine | undefined {
  if (!line.startsWith('{"')) return undefined;
  try {
    const entry = JSON.parse(line) as Record<string, unknown>;
    if (typeof entry.level !== 'string' || typeof entry.msg !== 'string') return undefined;
    const component = typeof entry.scope === 'string' ? entry.scope.replace(/^envoy /, '') : '';
    return { level: entry.level, component, message: entry.msg, caller: typeof entry.caller === 'string' ? entry.caller : undefined };
  } catch {
    return undefined;
  }
}
