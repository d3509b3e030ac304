/**
 * Istio's runtime defaults (pkg/bootstrap/config.go): the static layer of
 * the bootstrap's layered_runtime. Without the RE2 key, Envoy refuses a
 * route regex whose program is over 100 instructions, which istiod accepts.
 */
const istioRuntimeDefaults: Readonly<Record<string, string | boolean>> = {
  're2.max_program_size.error_level': '32768',
  'envoy.deprecated_features:envoy.config.listener.v3.Listener.hidden_envoy_deprecated_use_original_dst': true,
  'envoy.reloadable_features.http_reject_path_with_fragment': false,
  'envoy.reloadable_features.fixed_heap_use_allocated': true,
  'envoy.reloadable_features.coalesce_lb_rebuilds_on_batch_update': false,
};

/**
 * The static layer: Istio's defaults with ProxyConfig `runtimeValues` laid
 * over them, as Istio lays them: "" removes a default, "true"/"false"
 * become booleans (Envoy no longer reads them from strings), anything else
 * stays a string.
 */
export function runtimeStaticLayer(runtimeValues: Readonly<Record<string, string>> = {}): Record<string, string | boolean> {
  const layer: Record<string, string | boolean> = { ...istioRuntimeDefaults };
  for (const [key, value] of Object.entries(runtimeValues)) {
    if (value === '') delete layer[key];
    else layer[key] = value === 'true' ? true : value === 'false' ? false : value;
  }
  return layer;
}

/** Istio's two layers: the static one, then an admin layer that `/runtime_modify` writes to. */
export function layeredRuntime(runtimeValues?: Readonly<Record<string, string>>): unknown {
  return {
    layers: [
      { name: 'global config', static_layer: runtimeStaticLayer(runtimeValues) },
      { name: 'admin', admin_layer: {} },
    ],
  };
}

/** Istio's JSON line for Envoy's own log (`--log_as_json`); `%j` escapes the message, so one message is one line. */
export function applicationLogConfig(logAsJson: boolean): unknown {
  if (!logAsJson) return null;
  return {
    log_format: {
      json_format: { time: '%Y-%m-%dT%T.%fZ', level: '%l', scope: 'envoy %n', msg: '%j', caller: '%g:%#', thread: '%t' },
    },
  };
}

/** Envoy's limit when nothing sets one, as Istio renders it: int32's max. */
export const unlimitedDownstreamConnections = 2147483647;

/** The overload manager's global downstream connection limit, with Istio's resource monitor. */
export function overloadManager(maxConnections = unlimitedDownstreamConnections): unknown {
  return {
    resource_monitors: [
      {
        name: 'envoy.resource_monitors.global_downstream_max_connections',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig',
          max_active_downstream_connections: maxConnections,
        },
      },
    ],
  };
}
