import { adminClient } from '../envoy/admin.ts';
import { startStatus, type StartStatusOptions } from '../status/status.ts';
import { stopsOnDispose, type RuntimeContext } from './context.ts';

/** What the status server reads beyond the context: the agent, its epochs and the other parts. */
export type StatusInputs = Omit<StartStatusOptions, 'port' | 'adminPort' | 'adminHost' | 'admin' | 'registry' | 'clock' | 'logger'>;

/** The status server on --statusPort beside Envoy; undefined when the port is 0. */
export async function startStatusPart(ctx: RuntimeContext, inputs: StatusInputs): Promise<AsyncDisposable | undefined> {
  const { config } = ctx;
  const status = await startStatus({
    ...inputs, port: config.statusPort, adminPort: config.proxyAdminPort, adminHost: config.proxyAdminHost,
    admin: adminClient(config.proxyAdminPort, { host: config.proxyAdminHost }),
    registry: ctx.registry, clock: ctx.clock, logger: ctx.logger.child({ component: 'status' }),
  });
  return status && stopsOnDispose(status, () => status.close());
}
