import { probeRunner } from '../status/app-probes/probe.ts';
import type { ProbeNetwork } from '../status/app-probes/probe-target.ts';
import type { HealthAction } from './probe-config.ts';

/** Output of an exec probe is not read: only its exit code counts. */
type Exec = (command: string[], timeoutMs: number) => Promise<{ exitCode?: number; timedOut: boolean; failed: string | undefined }>;

/** One run of the configured check, as the checker asks it: undefined when it passed, else why not. Never rejects. */
export function healthProbe(action: HealthAction, network: ProbeNetwork, exec: Exec = runCommand): () => Promise<string | undefined> {
  if (action.kind === 'exec') {
    return async () => {
      const result = await exec(action.command, action.timeoutMs);
      if (result.exitCode === 0) return undefined;
      if (result.timedOut) return `exec probe timed out after ${action.timeoutMs} ms`;
      return `exec probe failed: ${result.failed ?? `exit code ${result.exitCode}`}`;
    };
  }
  const run = probeRunner(action.probe, network);
  return async () => {
    const verdict = await run();
    // As the kubelet and Istio's HTTP prober: 2xx and 3xx pass.
    return verdict.status >= 200 && verdict.status < 400 ? undefined : verdict.reason;
  };
}

async function runCommand(command: string[], timeoutMs: number): ReturnType<Exec> {
  const { execa } = await import('execa');
  const result = await execa(command[0]!, command.slice(1), { timeout: timeoutMs, reject: false, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' });
  const failed = result.exitCode === undefined ? (result.signal ? `killed by ${result.signal}` : result.shortMessage) : undefined;
  return { exitCode: result.exitCode, timedOut: result.timedOut, failed };
}
