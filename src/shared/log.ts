import { pino, type Logger, type Level } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level?: Level;
  /** Human-readable lines instead of JSON; the CLI turns it on for terminals. */
  pretty?: boolean;
}

/** Makes the root logger. Only `cli/` calls this; everything else gets a child. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  if (options.pretty) {
    return pino({ level, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  // Synchronous writes: exit paths call process.exit and must not lose lines.
  return pino({ level, base: { pid: process.pid } }, pino.destination({ dest: 1, sync: true }));
}

/** A logger that drops everything, for tests and library callers. */
export const silentLogger: Logger = pino({ level: 'silent' });
