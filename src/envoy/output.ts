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

/**
 * Carries Envoy's output into the agent's log, one entry per line, at
 * Envoy's own level, tagged with the epoch by the logger passed in.
 */
export async function forwardOutput(lines: AsyncIterable<string>, logger: Logger, recent: RecentErrors): Promise<void> {
  try {
    for await (const line of lines) forwardLine(line, logger, recent);
  } catch {
    // The child's failure is its result's business (exit code, signal), not the log forwarder's.
  }
}

function forwardLine(line: string, logger: Logger, recent: RecentErrors): void {
  const match = envoyLine.exec(line);
  const level = (match && levels[match[1]!]) ?? 'info';
  const message = match ? match[3]! : line;
  // Unformatted lines are what Envoy prints outside its logger when it
  // gives up (e.g. "previous envoy process is still initializing"): keep them.
  if (!match || level === 'warn' || level === 'error' || level === 'fatal') recent.add(message);
  logger[level]({ envoyComponent: match?.[2] }, message);
}
