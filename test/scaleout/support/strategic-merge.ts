/**
 * The part of Kubernetes' strategic merge patch that kustomize `patches:` use on our manifests:
 * maps merge key by key, `null` deletes a key, and the lists Kubernetes declares with a merge
 * key (containers by name, env by name, ports by port number, …) merge item by item; every other
 * list is replaced whole. Patch directives (`$patch`, `$retainKeys`, `$setElementOrder`) are not
 * supported and fail loudly rather than being applied wrongly.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/**
 * List fields with a merge key, as the Kubernetes API declares them (`x-kubernetes-patch-merge-key`)
 * for the kinds this repository deploys. `ports` holds container ports (key containerPort) in a pod
 * and service ports (key port) in a Service; the first key an item carries is used.
 */
const MERGE_KEYS: Record<string, readonly string[]> = {
  containers: ['name'],
  initContainers: ['name'],
  env: ['name'],
  volumes: ['name'],
  volumeMounts: ['mountPath'],
  ports: ['containerPort', 'port'],
  imagePullSecrets: ['name'],
  topologySpreadConstraints: ['topologyKey'],
};

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `patch` applied to `target` (neither is modified); `field` is the key the values sit under. */
export function strategicMerge(target: Json | undefined, patch: Json, field = ''): Json {
  if (isObject(patch)) {
    const directive = Object.keys(patch).find((key) => key.startsWith('$'));
    if (directive) throw new Error(`strategic merge: directive "${directive}" is not supported (under "${field}")`);
    const out: JsonObject = isObject(target) ? { ...target } : {};
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete out[key];
      else out[key] = strategicMerge(out[key], value, key);
    }
    return out;
  }
  if (Array.isArray(patch) && Array.isArray(target) && MERGE_KEYS[field]) return mergeList(target, patch, MERGE_KEYS[field], field);
  return structuredClone(patch);
}

/** Items named by the patch come first, in patch order, then the target's others (kustomize's order). */
function mergeList(target: Json[], patch: Json[], keys: readonly string[], field: string): Json[] {
  const rest = [...target];
  const merged: Json[] = [];
  for (const item of patch) {
    if (!isObject(item)) throw new Error(`strategic merge: "${field}" items must be objects`);
    const key = keys.find((candidate) => item[candidate] !== undefined);
    if (key === undefined) throw new Error(`strategic merge: a "${field}" item has none of its merge keys (${keys.join(', ')})`);
    const at = rest.findIndex((existing) => isObject(existing) && existing[key] === item[key]);
    merged.push(at >= 0 ? strategicMerge(rest.splice(at, 1)[0], item, field) : structuredClone(item));
  }
  return [...merged, ...rest.map((item) => structuredClone(item))];
}

export type { Json, JsonObject };
