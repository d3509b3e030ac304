/**
 * The two gateway shapes Istio runs the agent in (KUBE.md, "Other shapes"),
 * each with exactly what its template renders (istio/istio master,
 * manifests/charts/istio-control/istio-discovery/files/): the `gateway`
 * injection template that the `gateway` chart's Deployment asks for, and the
 * `kube-gateway` template istiod deploys for a Gateway API Gateway of class
 * istio. Each is `proxy router` as uid 1337 in a pod whose sysctl lets it bind
 * port 80; a request from outside to the pod's IP:80 goes through Envoy, over
 * mesh mTLS with the gateway's own certificate, to b.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { before, describe, it } from 'node:test';
import { suiteCleanup } from '../support/cleanup.ts';
import { gatewayUid, istiodName, startGatewayPod, type GatewayPod, type GatewayShape } from '../support/gateway-pod.ts';
import { netnsSkipReason } from '../support/netns.ts';
import { pollUntil } from '../support/poll.ts';

const skip = await netnsSkipReason();

/** The env both templates share, for a pod of `workload` in `namespace` (the chart's default limits: 2 CPUs, 1Gi). */
const templateEnv = (namespace: string, serviceAccount: string, workload: string, podIp: string, hostIp: string) => ({
  PILOT_CERT_PROVIDER: 'istiod', CA_ADDR: `${istiodName}:15012`, POD_NAME: `${workload}-7d9f8b6c5-x2x4q`, POD_NAMESPACE: namespace,
  INSTANCE_IP: podIp, SERVICE_ACCOUNT: serviceAccount, HOST_IP: hostIp, ISTIO_CPU_LIMIT: '2', PROXY_CONFIG: '{}', GOMEMLIMIT: '1073741824',
  ISTIO_META_APP_CONTAINERS: '', ISTIO_META_CLUSTER_ID: 'Kubernetes', ISTIO_META_NODE_NAME: 'node-1', ISTIO_META_INTERCEPTION_MODE: 'REDIRECT',
  ISTIO_META_WORKLOAD_NAME: workload, ISTIO_META_OWNER: `kubernetes://apis/apps/v1/namespaces/${namespace}/deployments/${workload}`,
  ISTIO_META_MESH_ID: 'cluster.local', TRUST_DOMAIN: 'cluster.local',
});

/** The `gateway` chart's defaults (release istio-ingressgateway in istio-system) through the `gateway` injection template. */
const chartGateway: GatewayShape = {
  namespace: 'istio-system',
  serviceAccount: 'istio-ingressgateway',
  args: ['--domain', 'istio-system.svc.cluster.local', '--proxyLogLevel=warning', '--proxyComponentLogLevel=misc:error', '--log_output_level=default:info'],
  env: (podIp, hostIp) => ({
    ...templateEnv('istio-system', 'istio-ingressgateway', 'istio-ingressgateway', podIp, hostIp),
    ISTIO_META_POD_PORTS: '[\n{"name":"http-envoy-prom","containerPort":15090,"protocol":"TCP"}\n]',
  }),
};

/** What istiod deploys for Gateway `gateway` of class istio in default (Deployment and service account gateway-istio). */
const kubeGateway: GatewayShape = {
  namespace: 'default',
  serviceAccount: 'gateway-istio',
  args: ['--domain', 'default.svc.cluster.local', '--proxyLogLevel', 'warning', '--proxyComponentLogLevel', 'misc:error', '--log_output_level', 'default:info'],
  env: (podIp, hostIp) => ({ ...templateEnv('default', 'gateway-istio', 'gateway-istio', podIp, hostIp), ISTIO_META_POD_PORTS: '[]' }),
};

/** One GET to the pod's IP:80 from outside the pod: the status and body, or the error. */
function get(podIp: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: podIp, port: 80, path: '/', timeout: 3_000 }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', (error) => resolve({ status: 0, body: error.message }));
    req.end();
  });
}

for (const [name, shape] of [['the gateway chart (gateway injection template)', chartGateway], ['a Gateway API Gateway (kube-gateway template)', kubeGateway]] as const) {
  describe(`${name}: proxy router as uid 1337 with only what the template renders`, { skip, timeout: 150_000 }, () => {
    const cleanup = suiteCleanup();
    let pod: GatewayPod;

    before(async () => {
      pod = await startGatewayPod(cleanup, shape);
    });

    it("answers a request to the pod's IP:80 through Envoy, over mTLS to b with the gateway's identity", async () => {
      const answer = await pollUntil(() => get(pod.podIp), {
        what: `a 200 from ${pod.podIp}:80`,
        timeoutMs: 60_000,
        intervalMs: 250,
        accept: (reply) => reply.status === 200,
        show: (reply) => `${reply.status} ${reply.body}; agent stderr: ${pod.agent.stderr().slice(-400)}`,
      });
      const body = JSON.parse(answer.body) as { app: string; caller: string | null };
      assert.equal(body.app, 'b');
      assert.equal(body.caller, `URI:spiffe://cluster.local/ns/${shape.namespace}/sa/${shape.serviceAccount}`, 'b saw the certificate the CA issued the gateway');
    });

    it('runs the agent and Envoy as uid 1337', async () => {
      const uid = async (pid: number) => (await readFile(`/proc/${pid}/status`, 'utf8')).match(/^Uid:\t(\d+)/m)?.[1];
      assert.equal(await uid(pod.agent.pid), String(gatewayUid));
      const envoys = pod.agent.liveEnvoys();
      assert.equal(envoys.length, 1, 'one Envoy');
      assert.equal(await uid(envoys[0]!), String(gatewayUid));
    });

    it('sends the node as a router, in its namespace', async () => {
      const node = await pod.peer.log.waitFor((entry) => entry.event === 'node', 10_000, 'the node at the xDS peer');
      const env = shape.env('', '');
      assert.equal(node.node, `router~${pod.podIp}~${env.POD_NAME}.${shape.namespace}~${shape.namespace}.svc.cluster.local`);
      const metadata = node.metadata as Record<string, unknown>;
      assert.deepEqual(
        [metadata.NAMESPACE, metadata.SERVICE_ACCOUNT, metadata.WORKLOAD_NAME, metadata.OWNER, metadata.CLUSTER_ID],
        [shape.namespace, shape.serviceAccount, env.ISTIO_META_WORKLOAD_NAME, env.ISTIO_META_OWNER, 'Kubernetes'],
      );
    });

    it("is ready on :15021 from outside the pod, where the template's readiness probe asks", async () => {
      const status = await fetch(`http://${pod.podIp}:15021/healthz/ready`, { signal: AbortSignal.timeout(5_000) }).then((response) => response.status);
      assert.equal(status, 200);
    });

    it('logs nothing at warn or above', () => {
      assert.deepEqual(pod.agent.log.entries.filter((entry) => Number(entry.level) >= 40).map((entry) => entry.msg), []);
    });
  });
}
