import { adminClient } from '../envoy/admin.ts';
import { stoppedServing } from '../agent/reconcile-types.ts';
import { HealthChecker } from '../health/checker.ts';
import { healthProbe } from '../health/probe.ts';
import type { HealthProbeConfig } from '../health/probe-config.ts';
import type { HealthReports } from '../health/reports.ts';
import type { ProbeNetwork } from '../status/app-probes/probe-target.ts';
import { ReadinessProbe } from '../status/readiness.ts';
import type { EpochsView, StatusAgent } from '../status/status.ts';
import type { RuntimeContext } from './context.ts';

export interface HealthInputs {
  probe: HealthProbeConfig;
  network: ProbeNetwork;
  /** Where the verdicts go; the relay sends them to the discovery server. */
  reports: HealthReports;
  agent: Pick<StatusAgent, 'state'>;
  epochs: Pick<EpochsView, 'whyNotLive'>;
  certificateProblem?: () => string | undefined;
}

/**
 * The workload health checks of ProxyConfig.readinessProbe (a VM's
 * WorkloadGroup probe): Envoy's readiness first, then the probe, as
 * Istio's agent judges it; istiod marks the WorkloadEntry from the reports.
 */
export function startHealthPart(ctx: RuntimeContext, inputs: HealthInputs): AsyncDisposable {
  const envoy = new ReadinessProbe({
    admin: adminClient(ctx.config.proxyAdminPort, { host: ctx.config.proxyAdminHost }),
    stopping: () => stoppedServing(inputs.agent.state),
    notLive: () => inputs.epochs.whyNotLive(inputs.agent.state),
    blocked: inputs.certificateProblem,
  });
  const checker = new HealthChecker({
    config: inputs.probe,
    probe: healthProbe(inputs.probe.action, inputs.network),
    envoyReady: async () => {
      const readiness = await envoy.check();
      return readiness.ready ? undefined : `Envoy is not ready: ${readiness.reason}`;
    },
    report: (report) => inputs.reports.publish(report),
    clock: ctx.clock,
    logger: ctx.logger.child({ component: 'health' }),
  });
  checker.start();
  return checker;
}
