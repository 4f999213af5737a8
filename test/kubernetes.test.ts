// The Kubernetes manifests agree with the gateway they run: they parse, their ConfigMap is a
// valid configuration, each role's Deployment runs the command compose.yaml runs, probes
// /readyz and /healthz on the port that configuration listens on, and gives a stopping pod longer
// than shutdownGraceMs; the Service, the PodDisruptionBudgets and the mounts find what they name.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.ts';
import type { GatewayConfig } from '../src/config/schema.ts';
import { SHUTDOWN_MARGIN_MS } from '../src/runtime/shutdown-policy.ts';
import { turnQueueName } from '../queues/turns.ts';
import { KUBERNETES_DIR, readCompose, readDockerfile, readKubernetesManifests, type Manifest } from './support/deployment-files.ts';
import { readFileSync } from 'node:fs';

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  command?: string[];
  args: string[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports: { name: string; containerPort: number }[];
  readinessProbe: Probe;
  livenessProbe: Probe;
  volumeMounts: { name: string; mountPath: string }[];
  lifecycle?: { preStop?: { sleep?: { seconds: number }; exec?: { command: string[] } } };
}
interface PodSpec {
  terminationGracePeriodSeconds: number;
  containers: Container[];
  volumes: { name: string; configMap?: { name: string; items: { key: string; path: string }[] }; secret?: { secretName: string } }[];
  securityContext?: { runAsNonRoot?: boolean };
}
interface DeploymentSpec {
  replicas: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}

const manifests = readKubernetesManifests();
const byKind = (kind: string): Manifest[] => manifests.filter((manifest) => manifest.kind === kind);
const configMap = byKind('ConfigMap')[0] as Manifest & { data: Record<string, string> };
const secret = byKind('Secret')[0] as Manifest & { stringData: Record<string, string> };
const image = readDockerfile();
const compose = readCompose();
const tempDir = mkdtempSync(join(tmpdir(), 'a2a-k8s-config-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

/** The configuration a pod gets: the image's ENV, then the ConfigMap's variables, with the config file it mounts. */
function podConfig(): GatewayConfig {
  const variables = Object.fromEntries(Object.entries(configMap.data).filter(([key]) => /^[A-Z0-9_]+$/.test(key)));
  const configFile = join(tempDir, basename(variables.A2A_CONFIG as string));
  writeFileSync(configFile, configMap.data[basename(variables.A2A_CONFIG as string)] as string);
  return loadConfig({ ...image.env, ...variables, A2A_CONFIG: configFile }).config;
}

function deployment(role: 'gateway' | 'worker'): DeploymentSpec {
  const found = byKind('Deployment').filter((manifest) => manifest.metadata.labels?.['app.kubernetes.io/component'] === role);
  expect(found, `one Deployment for the ${role} role`).toHaveLength(1);
  return (found[0] as Manifest & { spec: DeploymentSpec }).spec;
}

const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

describe('the Kubernetes manifests', () => {
  it('parse, and kustomization.yaml lists every one of them', () => {
    expect(manifests.length).toBeGreaterThanOrEqual(7);
    for (const manifest of manifests) expect(typeof manifest.apiVersion === 'string' && typeof manifest.kind === 'string', manifest.file).toBe(true);
    const kustomization = parse(readFileSync(join(KUBERNETES_DIR, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    const files = readdirSync(KUBERNETES_DIR).filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it('hold a valid configuration in the ConfigMap', () => {
    const config = podConfig();
    expect(config.auth.issuers.length, 'a real token issuer, not the development one').toBeGreaterThan(0);
    expect(config.healthPort).toBeDefined();
  });

  it('run each role with the command compose.yaml uses, through the image entrypoint', () => {
    for (const [role, service] of [['gateway', 'gateway'], ['worker', 'worker']] as const) {
      const container = deployment(role).template.spec.containers[0] as Container;
      expect(container.command, 'no command override: the image ENTRYPOINT runs').toBeUndefined();
      expect(container.args).toEqual(compose.services[service]?.command);
      expect(container.envFrom?.[0]?.configMapRef?.name).toBe(configMap.metadata.name);
    }
  });

  it('probe /readyz (readiness) and /healthz (liveness) on the port the configuration listens on', () => {
    const config = podConfig();
    for (const [role, port] of [['gateway', config.port], ['worker', config.healthPort]] as const) {
      const container = deployment(role).template.spec.containers[0] as Container;
      const named = container.ports.find((entry) => entry.name === container.readinessProbe.httpGet.port);
      expect(named?.containerPort, `${role} probes the port it listens on`).toBe(port);
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.livenessProbe.httpGet.port).toBe(container.readinessProbe.httpGet.port);
    }
  });

  it('give a stopping pod at least its preStop hook, shutdownDrainMs, shutdownGraceMs and the shutdown margin', () => {
    const { shutdownGraceMs, shutdownDrainMs } = podConfig();
    for (const role of ['gateway', 'worker'] as const) {
      const pod = deployment(role).template.spec;
      const preStopMs = (pod.containers[0]?.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(preStopMs + shutdownDrainMs + shutdownGraceMs + SHUTDOWN_MARGIN_MS);
    }
  });

  it('keep a terminating gateway serving until the Service has stopped sending it requests (preStop), then SIGTERM drains it', () => {
    const preStop = deployment('gateway').template.spec.containers[0]?.lifecycle?.preStop;
    expect(preStop?.sleep?.seconds).toBeGreaterThanOrEqual(3);
  });

  it('scale the workers on their queue depth, a series the gateways export, and never below what the disruption budget keeps', () => {
    const hpas = byKind('HorizontalPodAutoscaler') as (Manifest & {
      spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number; metrics: { type: string; external: { metric: { name: string; selector: { matchLabels: Record<string, string> } }; target: { type: string } } }[] };
    })[];
    expect(hpas).toHaveLength(1);
    const [hpa] = hpas;
    const worker = byKind('Deployment').find((manifest) => manifest.metadata.labels?.['app.kubernetes.io/component'] === 'worker');
    expect(hpa?.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: worker?.metadata.name });
    const budget = (byKind('PodDisruptionBudget') as (Manifest & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } })[]).find((entry) =>
      matches(entry.spec.selector.matchLabels, deployment('worker').template.metadata.labels),
    );
    expect(hpa?.spec.minReplicas).toBeGreaterThan(budget?.spec.minAvailable ?? Number.POSITIVE_INFINITY);
    const [metric] = hpa?.spec.metrics ?? [];
    expect(metric?.type).toBe('External');
    expect(metric?.external.metric.selector.matchLabels.queue).toBe(turnQueueName('default'));
    // The Prometheus adapter rule in the file's header makes that External metric from the
    // gateways' series (test/monitoring.test.ts finds a2a_queue_jobs in a live /metrics).
    const text = readFileSync(join(KUBERNETES_DIR, hpa?.file ?? ''), 'utf8');
    expect(text).toContain(`seriesQuery: 'a2a_queue_jobs{state="waiting"}'`);
    expect(text).toContain(`as: ${metric?.external.metric.name}`);
  });

  it('select the gateway pods from the Service and keep one pod of each role through voluntary disruptions', () => {
    const service = byKind('Service')[0] as Manifest & { spec: { selector: Record<string, string>; ports: { targetPort: string }[] } };
    const gateway = deployment('gateway');
    expect(matches(service.spec.selector, gateway.template.metadata.labels)).toBe(true);
    expect(matches(service.spec.selector, deployment('worker').template.metadata.labels)).toBe(false);
    expect(gateway.template.spec.containers[0]?.ports.map((port) => port.name)).toContain(service.spec.ports[0]?.targetPort);
    const budgets = byKind('PodDisruptionBudget') as (Manifest & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } })[];
    for (const role of ['gateway', 'worker'] as const) {
      const spec = deployment(role);
      expect(matches(spec.selector.matchLabels, spec.template.metadata.labels)).toBe(true);
      const budget = budgets.filter((entry) => matches(entry.spec.selector.matchLabels, spec.template.metadata.labels));
      expect(budget, `one PodDisruptionBudget for the ${role} pods`).toHaveLength(1);
      expect(budget[0]?.spec.minAvailable).toBeLessThan(spec.replicas);
      expect(spec.template.spec.securityContext?.runAsNonRoot).toBe(true);
    }
  });

  it('mount the config file and the key files where the configuration looks for them', () => {
    const variables = configMap.data;
    for (const role of ['gateway', 'worker'] as const) {
      const pod = deployment(role).template.spec;
      const mountOf = (volumeName: string): string | undefined => pod.containers[0]?.volumeMounts.find((mount) => mount.name === volumeName)?.mountPath;
      const configVolume = pod.volumes.find((volume) => volume.configMap?.name === configMap.metadata.name);
      const item = configVolume?.configMap?.items[0];
      expect(`${mountOf(configVolume?.name ?? '')}/${item?.path}`).toBe(variables.A2A_CONFIG);
      const keysVolume = pod.volumes.find((volume) => volume.secret?.secretName === secret.metadata.name);
      for (const file of [variables.A2A_CARD_SIGNING_KEY_FILE as string, variables.A2A_PUSH_SIGNING_KEY_FILE as string]) {
        expect(dirname(file)).toBe(mountOf(keysVolume?.name ?? ''));
        expect(Object.keys(secret.stringData)).toContain(basename(file));
      }
    }
  });
});
