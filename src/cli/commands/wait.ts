import { Command, InvalidArgumentError } from 'commander';
import { systemClock } from '../../shared/clock.ts';
import { ExitCode } from '../../shared/errors.ts';
import { urlCheck, waitReady } from '../../status/wait-ready.ts';
import type { CommandContext } from '../context.ts';

interface WaitFlags {
  timeoutSeconds: number;
  requestTimeoutMillis: number;
  periodMillis: number;
  url: string;
}

const count = (text: string) => {
  if (!/^\d+$/.test(text)) throw new InvalidArgumentError('not a non-negative integer');
  return Number(text);
};

/**
 * `pilot-agent wait`: polls the readiness URL (Envoy's 15021 listener) until
 * it answers 200 (exit 0) or the timeout passes (exit 1). Istio's flags.
 */
export function waitCommand(context: CommandContext): Command {
  return new Command('wait')
    .description('Wait until the proxy is ready: exit 0 when ready, 1 on timeout')
    .option('--timeoutSeconds <n>', 'how long to wait', count, 60)
    .option('--requestTimeoutMillis <n>', 'timeout of each request', count, 500)
    .option('--periodMillis <n>', 'time between requests', count, 500)
    .option('--url <url>', 'readiness URL', 'http://localhost:15021/healthz/ready')
    .action(async (flags: WaitFlags) => {
      context.stdout.write(`Waiting for Envoy proxy to be ready (timeout: ${flags.timeoutSeconds} seconds)...\n`);
      const result = await waitReady({
        check: urlCheck(flags.url, flags.requestTimeoutMillis),
        clock: systemClock,
        periodMs: flags.periodMillis,
        timeoutMs: flags.timeoutSeconds * 1000,
      });
      if (result.ready) return void context.stdout.write('Envoy is ready!\n');
      context.stderr.write(`pilot-agent: timeout waiting for Envoy proxy to become ready. Last error: ${result.last}\n`);
      context.exitCode = ExitCode.runtime;
    });
}
