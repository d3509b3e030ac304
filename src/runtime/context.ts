import { Registry } from '../metrics/index.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { runtimeEvents, type RuntimeEvents } from './events.ts';

/** What every part of the runtime is started with. */
export interface RuntimeContext {
  config: AgentConfig;
  registry: Registry;
  clock: Clock;
  logger: Logger;
  events: RuntimeEvents;
}

/** A fresh context: one metrics registry and one set of events per run. */
export function runtimeContext(config: AgentConfig, logger: Logger, clock: Clock = systemClock): RuntimeContext {
  return { config, registry: new Registry(), clock, logger, events: runtimeEvents() };
}

/** What a room's start takes of the context: the clock, the registry, and a logger named after the room. */
export function roomDeps(ctx: RuntimeContext, component: string): { clock: Clock; registry: Registry; logger: Logger } {
  return { clock: ctx.clock, registry: ctx.registry, logger: ctx.logger.child({ component }) };
}

/** A started part as a recipe's stack takes it: the part, which stops on dispose. */
export function stopsOnDispose<T extends object>(part: T, stop: () => unknown): T & AsyncDisposable {
  return Object.assign(part, { [Symbol.asyncDispose]: async () => void (await stop()) });
}
