import { parseAppProbe, type AppProbe } from '../status/app-probes/config.ts';
import { AgentError } from '../shared/errors.ts';

/** What one check runs: a probe against the app (HTTP, TCP, gRPC), or a command on the host (a VM's exec probe). */
export type HealthAction = { kind: 'app'; probe: AppProbe } | { kind: 'exec'; command: string[]; timeoutMs: number };

/** ProxyConfig.readinessProbe (a WorkloadGroup's `probe`), with Istio's defaults filled in. */
export interface HealthProbeConfig {
  action: HealthAction;
  initialDelayMs: number;
  periodMs: number;
  successThreshold: number;
  failureThreshold: number;
}

type Json = Record<string, unknown>;

/**
 * Parses ProxyConfig.readinessProbe as Istio's health checker reads it
 * (pkg/istio-agent/health: thresholds at least 1, timeout 1 s and period
 * 10 s when zero). `source` names where it came from in the error line (exit 2).
 */
export function parseHealthProbe(
  value: unknown, options: { source: string; destination: string; warn: (message: string) => void },
): HealthProbeConfig | undefined {
  if (value === undefined || value === null) return undefined;
  const fail = (reason: string) => new AgentError('BAD_ENV', `${options.source}: field readinessProbe: ${reason}`);
  if (!isObject(value)) throw fail('must be an object');
  const seconds = (field: string, fallback: number) => {
    const given = value[field] ?? 0;
    if (typeof given !== 'number' || !Number.isInteger(given) || given < 0) throw fail(`${field} must be a whole number, 0 or more`);
    return given === 0 ? fallback : given;
  };
  const timeoutMs = seconds('timeoutSeconds', 1) * 1000;
  return {
    action: action(value, { fail, timeoutMs, destination: options.destination, warn: options.warn }),
    initialDelayMs: seconds('initialDelaySeconds', 0) * 1000,
    periodMs: seconds('periodSeconds', 10) * 1000,
    successThreshold: seconds('successThreshold', 1),
    failureThreshold: seconds('failureThreshold', 1),
  };
}

interface ActionContext {
  fail: (reason: string) => Error;
  timeoutMs: number;
  destination: string;
  warn: (message: string) => void;
}

function action(value: Json, context: ActionContext): HealthAction {
  const { fail, timeoutMs } = context;
  const kinds = ['httpGet', 'tcpSocket', 'grpc', 'exec'].filter((kind) => value[kind] !== undefined && value[kind] !== null);
  if (kinds.length !== 1) throw fail('needs exactly one of httpGet, tcpSocket, grpc, exec');
  if (kinds[0] === 'exec') {
    const command = isObject(value.exec) ? value.exec.command : undefined;
    if (!Array.isArray(command) || command.length === 0 || !command.every((part) => typeof part === 'string'))
      throw fail('exec.command must be a non-empty list of strings');
    return { kind: 'exec', command: command as string[], timeoutMs };
  }
  const probe = parseAppProbe({ ...value, timeoutSeconds: timeoutMs / 1000 }, { ...context, fail: (reason) => fail(reason) });
  return { kind: 'app', probe };
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
