import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type Level } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level?: Level;
  /** Human-readable lines instead of JSON; the CLI turns it on for terminals. */
  pretty?: boolean;
  /** Per-component levels (`--log_output_level xds:debug`), keyed by the `component` binding. */
  components?: Record<string, Level>;
  /** 2 when stdout carries output of its own (`--print-bootstrap`); 1 otherwise. */
  fd?: 1 | 2;
}

/** Makes the root logger. Only `cli/` calls this; everything else gets a child. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const filter = componentFilter(level, options.components ?? {});
  if (options.pretty) {
    // In process, not pino's worker transport (which needs pino's own files next to it, not a bundle); loaded only for terminals.
    const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
    return pino(filter, pretty({ colorize: true, destination: options.fd ?? 1, sync: true }));
  }
  // Synchronous writes: exit paths call process.exit and must not lose lines.
  return pino({ ...filter, base: { pid: process.pid } }, pino.destination({ dest: options.fd ?? 1, sync: true }));
}

/**
 * The root logs at the lowest level asked for; a hook then drops each line
 * below its component's level, so every `child({ component })` made anywhere
 * obeys `--log_output_level` without being told.
 */
function componentFilter(level: Level, components: Record<string, Level>): LoggerOptionsWithHooks {
  if (Object.keys(components).length === 0) return { level };
  const values = pino.levels.values;
  const lowest = [level, ...Object.values(components)].sort((a, b) => values[a]! - values[b]!)[0]!;
  return {
    level: lowest,
    hooks: {
      logMethod(args, method, lineLevel) {
        const component = (this.bindings() as { component?: string }).component;
        const wanted = (component !== undefined && components[component]) || level;
        if (lineLevel >= values[wanted]!) method.apply(this, args);
      },
    },
  };
}

type LoggerOptionsWithHooks = Pick<pino.LoggerOptions, 'level' | 'hooks'>;

/** A logger that drops everything, for tests and library callers. */
export const silentLogger: Logger = pino({ level: 'silent' });
