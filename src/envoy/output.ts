import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
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
export function forwardOutput(stream: Readable, logger: Logger, recent: RecentErrors): Promise<void> {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  lines.on('line', (line) => {
    const match = envoyLine.exec(line);
    const level = (match && levels[match[1]!]) ?? 'info';
    const message = match ? match[3]! : line;
    // Unformatted lines are what Envoy prints outside its logger when it
    // gives up (e.g. "previous envoy process is still initializing"): keep them.
    if (!match || level === 'warn' || level === 'error' || level === 'fatal') recent.add(message);
    logger[level]({ envoyComponent: match?.[2] }, message);
  });
  return new Promise((resolve) => lines.once('close', resolve));
}
