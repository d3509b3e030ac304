# gwchart.py [NAME [NAMESPACE]]: print (JSON List) what `helm template NAME manifests/charts/gateway -n NAMESPACE` makes with
# the chart's defaults (templates/{serviceaccount,role,service,deployment}.yaml; no helm here): ServiceAccount, Role +
# RoleBinding (secrets), the LoadBalancer Service (15021, 80, 443), the Deployment whose pod carries the chart's
# podAnnotations (inject.istio.io/templates: gateway, sidecar.istio.io/inject) and its sysctl. The HPA (autoscaling.enabled)
# is left out: no HPA controller runs, and without replicas the Deployment makes one pod, as the HPA's minReplicas would.
import json, sys

name = sys.argv[1] if len(sys.argv) > 1 else "istio-ingressgateway"
ns = sys.argv[2] if len(sys.argv) > 2 else "istio-system"
sel = {"app": name, "istio": name.removeprefix("istio-")}
istio = {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": name, "app.kubernetes.io/part-of": "istio"}
labels = {"app.kubernetes.io/name": name, **istio, **sel, "istio.io/dataplane-mode": "none"}
meta = lambda kind: {"name": name, "namespace": ns, "labels": labels, "annotations": {}}
objs = [
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("sa")},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("role"),
     "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("rb"),
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
     "subjects": [{"kind": "ServiceAccount", "name": name}]},
    {"apiVersion": "v1", "kind": "Service", "metadata": meta("svc"), "spec": {"type": "LoadBalancer", "selector": sel, "ports": [
        {"name": "status-port", "port": 15021, "protocol": "TCP", "targetPort": 15021},
        {"name": "http2", "port": 80, "protocol": "TCP", "targetPort": 80},
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 443}]}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("deploy"), "spec": {
        "selector": {"matchLabels": sel},
        "template": {
            "metadata": {"annotations": {"prometheus.io/port": "15020", "prometheus.io/scrape": "true",
                                         "prometheus.io/path": "/stats/prometheus", "inject.istio.io/templates": "gateway",
                                         "sidecar.istio.io/inject": "true"},
                         "labels": {"sidecar.istio.io/inject": "true", **sel, "app.kubernetes.io/name": name, **istio,
                                    "istio.io/dataplane-mode": "none"}},
            "spec": {"serviceAccountName": name,
                     "securityContext": {"sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]},
                     "containers": [{"name": "istio-proxy", "image": "auto",
                                     "securityContext": {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False,
                                                         "privileged": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True},
                                     "env": [], "ports": [{"containerPort": 15090, "protocol": "TCP", "name": "http-envoy-prom"}],
                                     "resources": {"limits": {"cpu": "2000m", "memory": "1024Mi"},
                                                   "requests": {"cpu": "100m", "memory": "128Mi"}}}],
                     "terminationGracePeriodSeconds": 30}}}},
]
json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, sys.stdout)
