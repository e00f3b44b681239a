/**
 * deploy/kubernetes: the base and the example overlay are rendered the way kustomize renders them
 * and checked against the Kubernetes API schemas offline (a typo fails CI), then read for what the
 * gateway needs from them: a hardened pod, probes on /healthz and /readyz, a grace period that
 * covers preStop + drain, a config that the gateway accepts with the pod's environment.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ConfigError, parseConfig } from '../../src/node/config/load.js';
import { REPO_ROOT, tmpDir } from '../support/processes.js';
import { validateFieldNames, validateManifests, validateValues } from './support/k8s-validate.js';
import { renderKustomization, resourceId, type Manifest, type Rendered } from './support/kustomize.js';
import { containerEnv, find, gatewayContainer, mountedConfig, podTemplate, preStopSeconds } from './support/pod.js';

const KUBE = path.join(REPO_ROOT, 'deploy/kubernetes');
const BASE = path.join(KUBE, 'base');
const EXAMPLE = path.join(KUBE, 'overlays/example');
/** src/cli/main.ts: after the drain, engines get until drainTimeoutMs + 15 s, then the process exits anyway. */
const ENGINE_STOP_MARGIN_S = 15;

const manifestsOf = (rendered: readonly Rendered[]): Manifest[] => rendered.map((r) => r.manifest);
const kinds = (rendered: readonly Rendered[]): string[] => rendered.map((r) => r.manifest.kind).sort();

function hasKubectl(): boolean {
  return spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
}

/** A throwaway overlay on the real base, with one patch (how a typo would reach CI). */
function overlayWith(patch: string, extra = ''): string {
  const dir = tmpDir('rcp-kustomize-');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'kustomization.yaml'), `resources:\n  - ${BASE}\npatches:\n  - path: patch.yaml\n${extra}`);
  writeFileSync(path.join(dir, 'patch.yaml'), patch);
  return dir;
}

describe.each([
  ['base', BASE],
  ['example overlay', EXAMPLE],
])('deploy/kubernetes %s', (_name, dir) => {
  const rendered = renderKustomization(dir);
  const deployment = find(rendered, 'Deployment', 'rcp-gateway');
  const container = gatewayContainer(deployment);
  const pod = podTemplate(deployment);

  it('renders to valid Kubernetes objects (values and field names)', async () => {
    expect(kinds(rendered)).toEqual(
      expect.arrayContaining(['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Secret', 'Service']),
    );
    expect(await validateManifests(manifestsOf(rendered))).toEqual([]);
  });

  it('runs a hardened pod: non-root, read-only root filesystem, no privileges, requests and limits', () => {
    expect(pod.spec.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.spec.securityContext?.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    for (const resource of ['cpu', 'memory']) {
      expect(container.resources?.requests?.[resource], `requests.${resource}`).toBeDefined();
      expect(container.resources?.limits?.[resource], `limits.${resource}`).toBeDefined();
    }
  });

  it('probes /healthz for liveness and /readyz for readiness, on ports the container declares', () => {
    expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
    const names = (container.ports ?? []).map((p) => p.name);
    for (const probe of [container.livenessProbe, container.readinessProbe]) expect(names).toContain(probe?.httpGet?.port);
  });

  it('mounts a config the gateway accepts with the pod environment, listening where the pod says', () => {
    const { mount, text } = mountedConfig(deployment, rendered);
    // A subPath mount is never updated when the ConfigMap changes: the watch would see nothing.
    expect(mount.subPath).toBeUndefined();
    const env = containerEnv(container, rendered);
    let config;
    try {
      config = parseConfig(JSON.parse(text), { baseDir: mount.mountPath, env }).config;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      // The base ships an empty Secret on purpose: the gateway must refuse to start with it.
      expect(dir).toBe(BASE);
      expect(err.problems).toEqual([expect.stringMatching(/^gateway\.cursorSecret: /)]);
      config = parseConfig(JSON.parse(text), { baseDir: mount.mountPath, env: { ...env, RCPGW_CURSOR_SECRET: 'x'.repeat(32) } }).config;
    }
    expect(config.gateway.watchConfig).toBe(true);
    expect(config.gateway.host).toBe('0.0.0.0');
    const portOf = (name: string): number | undefined => container.ports?.find((p) => p.name === name)?.containerPort;
    expect(portOf('http')).toBe(config.gateway.port);
    expect(portOf('metrics')).toBe(config.gateway.metrics.port);
  });

  it('gives the pod time for preStop, the whole drain and the engine stop before SIGKILL', () => {
    const { text } = mountedConfig(deployment, rendered);
    const env = { ...containerEnv(container, rendered), RCPGW_CURSOR_SECRET: 'x'.repeat(32) };
    const { drainTimeoutMs } = parseConfig(JSON.parse(text), { baseDir: '/', env }).config.gateway;
    const preStop = preStopSeconds(container);
    expect(preStop).toBeGreaterThan(0);
    const needed = preStop + Math.ceil(drainTimeoutMs / 1000) + ENGINE_STOP_MARGIN_S;
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(needed);
  });

  it('points the Service, the disruption budget and the autoscaler at this Deployment', () => {
    const service = find(rendered, 'Service') as Manifest & {
      spec: { selector: Record<string, string>; ports: Array<{ name: string; targetPort: string }> };
    };
    expect(pod.labels).toMatchObject(service.spec.selector);
    const names = (container.ports ?? []).map((p) => p.name);
    for (const port of service.spec.ports) expect(names).toContain(port.targetPort);
    const pdb = find(rendered, 'PodDisruptionBudget') as Manifest & { spec: { selector: { matchLabels: Record<string, string> } } };
    expect(pod.labels).toMatchObject(pdb.spec.selector.matchLabels);
    const hpa = find(rendered, 'HorizontalPodAutoscaler') as Manifest & {
      spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number };
    };
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
    // The autoscaler owns the replica count; a replicas field would reset it on every apply.
    expect((deployment.spec as Record<string, unknown>).replicas).toBeUndefined();
    // With one replica, a rolling restart or a node drain would leave nobody to answer.
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
  });
});

describe('deploy/kubernetes example overlay', () => {
  const rendered = renderKustomization(EXAMPLE);

  it('puts everything in its namespace, with its image, and scrapes the metrics port', () => {
    for (const { manifest } of rendered) expect(manifest.metadata.namespace, resourceId(manifest)).toBe('search');
    expect(gatewayContainer(find(rendered, 'Deployment')).image).toBe('registry.example.com/search/rcp-gateway:0.1.0');
    const monitor = find(rendered, 'ServiceMonitor') as Manifest & { spec: { endpoints: Array<{ port: string; path: string }> } };
    const service = find(rendered, 'Service') as Manifest & { spec: { ports: Array<{ name: string }> } };
    expect(service.spec.ports.map((p) => p.name)).toContain(monitor.spec.endpoints[0]!.port);
    expect(monitor.spec.endpoints[0]!.path).toBe('/metrics');
  });
});

describe('manifest checks catch mistakes', () => {
  it('a typo in a field name fails the field-name check and names the field', () => {
    const dir = overlayWith(
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata:',
        '  name: rcp-gateway',
        'spec:',
        '  template:',
        '    spec:',
        '      containers:',
        '        - name: gateway',
        '          readinessProbes:',
        '            httpGet: { path: /readyz, port: metrics }',
        '',
      ].join('\n'),
    );
    const problems = validateFieldNames(manifestsOf(renderKustomization(dir)));
    expect(problems).toHaveLength(1);
    expect(problems[0]!.resource).toBe('Deployment/rcp-gateway');
    expect(problems[0]!.message).toMatch(/'"readinessProbes"' does not exist in type 'IContainer'/);
    expect(problems[0]!.message).toContain('containers[].readinessProbes');
  });

  it('a value of the wrong kind fails the value check', async () => {
    const dir = overlayWith(
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata:',
        '  name: rcp-gateway',
        'spec:',
        '  template:',
        '    spec:',
        '      containers:',
        '        - name: gateway',
        '          resources:',
        '            limits: { memory: lots }',
        '',
      ].join('\n'),
    );
    const problems = await validateValues(manifestsOf(renderKustomization(dir)));
    expect(problems.map((p) => p.resource)).toEqual(['Deployment/rcp-gateway']);
    expect(problems[0]!.message).toContain('resources/limits/memory');
  });

  it('a kind with no known schema is reported, not skipped', async () => {
    const manifest = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } } as Manifest;
    expect(await validateValues([manifest])).toEqual([{ resource: 'Widget/w', message: 'no schema for example.com/v1 Widget' }]);
  });

  it('the renderer refuses kustomize features it does not implement and patches that match nothing', () => {
    expect(() => renderKustomization(overlayWith('{}', 'configMapGenerator: []\n'))).toThrow(/configMapGenerator not supported/);
    const orphan = overlayWith('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: no-such-config\ndata: {}\n');
    expect(() => renderKustomization(orphan)).toThrow(/matches 0 resources/);
  });
});

describe('the renderer agrees with kustomize', () => {
  it.skipIf(!hasKubectl())('renders the base and the overlay exactly as `kubectl kustomize` does (skipped without kubectl)', () => {
    for (const dir of [BASE, EXAMPLE]) {
      const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
      const theirs = parseAllDocuments(result.stdout).map((d) => d.toJS() as Manifest);
      const byId = (list: readonly Manifest[]): Record<string, Manifest> => Object.fromEntries(list.map((m) => [resourceId(m), m]));
      expect(byId(manifestsOf(renderKustomization(dir)))).toEqual(byId(theirs));
    }
  });
});
