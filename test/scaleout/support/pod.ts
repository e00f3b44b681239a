/**
 * Read-only views of rendered manifests for the deployment checks: find a resource, the gateway
 * container, the environment a pod would get (Secret references resolved from the rendered
 * Secret) and the gateway config the ConfigMap holds.
 */
import type { Manifest, Rendered } from './kustomize.js';
import type { JsonObject } from './strategic-merge.js';

export interface Probe {
  httpGet?: { path?: string; port?: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
}
export interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    runAsNonRoot?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: Array<{ name: string; mountPath: string; subPath?: string }>;
}
export interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  terminationGracePeriodSeconds?: number;
  volumes?: Array<{ name: string; configMap?: { name: string }; emptyDir?: JsonObject }>;
}

export function find(rendered: readonly Rendered[], kind: string, name?: string): Manifest {
  const hits = rendered.filter(({ manifest }) => manifest.kind === kind && (name === undefined || manifest.metadata.name === name));
  if (hits.length !== 1) throw new Error(`expected one ${kind}${name ? `/${name}` : ''}, found ${hits.length}`);
  return hits[0]!.manifest;
}

export function podTemplate(deployment: Manifest): { labels: Record<string, string>; spec: PodSpec } {
  const template = (deployment.spec as unknown as { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } }).template;
  return { labels: template.metadata.labels, spec: template.spec };
}

export function gatewayContainer(deployment: Manifest): Container {
  const container = podTemplate(deployment).spec.containers.find((c) => c.name === 'gateway');
  if (!container) throw new Error('no container named "gateway"');
  return container;
}

/** The environment the container would see; a Secret key that does not exist is an error. */
export function containerEnv(container: Container, rendered: readonly Rendered[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of container.env ?? []) {
    const ref = entry.valueFrom?.secretKeyRef;
    if (!ref) {
      env[entry.name] = entry.value ?? '';
      continue;
    }
    const secret = find(rendered, 'Secret', ref.name) as Manifest & { stringData?: Record<string, string>; data?: Record<string, string> };
    const value =
      secret.stringData?.[ref.key] ??
      (secret.data?.[ref.key] !== undefined ? Buffer.from(secret.data[ref.key]!, 'base64').toString('utf8') : undefined);
    if (value === undefined) throw new Error(`env ${entry.name}: Secret ${ref.name} has no key ${ref.key}`);
    env[entry.name] = value;
  }
  return env;
}

/** Seconds the preStop hook holds the container before SIGTERM (exec `sleep N` or the sleep action). */
export function preStopSeconds(container: Container): number {
  const preStop = container.lifecycle?.preStop;
  if (preStop?.sleep) return preStop.sleep.seconds;
  const command = preStop?.exec?.command;
  if (command && command[0] === 'sleep' && command.length === 2) return Number(command[1]);
  return 0;
}

/** The ConfigMap file the container's `--config` argument points at, through its volume mount. */
export function mountedConfig(
  deployment: Manifest,
  rendered: readonly Rendered[],
): { mount: NonNullable<Container['volumeMounts']>[number]; text: string } {
  const container = gatewayContainer(deployment);
  const args = container.args ?? [];
  const file = args[args.indexOf('--config') + 1];
  if (!file) throw new Error('the gateway container has no --config argument');
  const mount = (container.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath}/`));
  if (!mount) throw new Error(`--config ${file} is not inside any volume mount`);
  const volume = podTemplate(deployment).spec.volumes?.find((v) => v.name === mount.name);
  if (!volume?.configMap) throw new Error(`volume ${mount.name} is not a ConfigMap`);
  const configMap = find(rendered, 'ConfigMap', volume.configMap.name) as Manifest & { data?: Record<string, string> };
  const key = file.slice(mount.mountPath.length + 1);
  const text = configMap.data?.[key];
  if (text === undefined) throw new Error(`ConfigMap ${volume.configMap.name} has no key ${key}`);
  return { mount, text };
}
