/**
 * A small kustomize renderer for the subset deploy/kubernetes uses, so `npm test` can check the
 * manifests a cluster would receive without a kustomize binary: `resources` (YAML files and
 * other kustomization folders), `patches` (strategic merge, from `path` or inline `patch`, with
 * an optional `target`), `namespace` and `images`. Any other kustomization field is an error,
 * so a manifest that starts to rely on more kustomize is not checked half-way.
 *
 * Like kustomize, a file must live inside its kustomization's folder (folders may be anywhere),
 * resource ids (group, kind, namespace, name) must be unique, and a patch must match exactly one
 * resource. Where kubectl is installed, test/scaleout/kubernetes.test.ts compares this renderer's
 * output with `kubectl kustomize`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isObject, strategicMerge, type Json, type JsonObject } from './strategic-merge.js';

export interface Manifest extends JsonObject {
  apiVersion: string;
  kind: string;
  metadata: JsonObject & { name: string; namespace?: string };
}

/** A rendered resource and the file it came from (for error messages). */
export interface Rendered {
  manifest: Manifest;
  source: string;
}

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'patches', 'namespace', 'images']);
const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}
interface PatchRule {
  path?: string;
  patch?: string;
  target?: { kind?: string; name?: string; group?: string; version?: string };
}

/** Render the kustomization in `dir` the way `kubectl kustomize dir` would (for the subset above). */
export function renderKustomization(dir: string): Rendered[] {
  const file = KUSTOMIZATION_FILES.map((name) => path.join(dir, name)).find((candidate) => existsSync(candidate));
  if (!file) throw new Error(`${dir}: no kustomization.yaml`);
  const [doc] = parseYaml(file);
  if (!isObject(doc)) throw new Error(`${file}: not a mapping`);
  const unknown = Object.keys(doc).filter((key) => !KNOWN_FIELDS.has(key));
  if (unknown.length > 0) throw new Error(`${file}: kustomization field(s) ${unknown.join(', ')} not supported by this renderer`);

  const rendered: Rendered[] = [];
  for (const entry of stringList(doc.resources, `${file}: resources`)) {
    const target = path.resolve(dir, entry);
    if (statSync(target).isDirectory()) rendered.push(...renderKustomization(target));
    else
      rendered.push(
        ...parseYaml(insideRoot(dir, target, file)).map((manifest) => ({ manifest: asManifest(manifest, target), source: target })),
      );
  }
  assertUniqueIds(rendered, file);
  for (const rule of (doc.patches ?? []) as PatchRule[]) applyPatch(rendered, rule, dir, file);
  if (typeof doc.namespace === 'string') for (const item of rendered) item.manifest.metadata.namespace = doc.namespace;
  for (const rule of (doc.images ?? []) as unknown as ImageRule[]) for (const item of rendered) applyImage(item.manifest, rule);
  return rendered;
}

/** group/kind/namespace/name, as kustomize identifies a resource. */
export function resourceId(manifest: Manifest): string {
  const group = manifest.apiVersion.includes('/') ? manifest.apiVersion.split('/')[0] : '';
  return `${group}/${manifest.kind}/${manifest.metadata.namespace ?? ''}/${manifest.metadata.name}`;
}

function parseYaml(file: string): Json[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map((e) => e.message).join('; ')}`);
    const value = document.toJS() as Json;
    return value === null ? [] : [value];
  });
}

function insideRoot(root: string, target: string, file: string): string {
  const relative = path.relative(root, target);
  if (relative.startsWith('..') || path.isAbsolute(relative))
    throw new Error(`${file}: ${target} is outside the kustomization folder (kustomize refuses it)`);
  return target;
}

function stringList(value: Json | undefined, what: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw new Error(`${what}: expected a list of paths`);
  return value as string[];
}

function asManifest(value: Json, source: string): Manifest {
  if (
    !isObject(value) ||
    typeof value.apiVersion !== 'string' ||
    typeof value.kind !== 'string' ||
    !isObject(value.metadata) ||
    typeof value.metadata.name !== 'string'
  ) {
    throw new Error(`${source}: a resource needs apiVersion, kind and metadata.name`);
  }
  return value as Manifest;
}

function assertUniqueIds(rendered: readonly Rendered[], file: string): void {
  const seen = new Map<string, string>();
  for (const { manifest, source } of rendered) {
    const id = resourceId(manifest);
    const first = seen.get(id);
    if (first) throw new Error(`${file}: resource ${id} is defined twice (${first}, ${source})`);
    seen.set(id, source);
  }
}

function applyPatch(rendered: Rendered[], rule: PatchRule, dir: string, file: string): void {
  const source = rule.path ? insideRoot(dir, path.resolve(dir, rule.path), file) : `${file} (inline patch)`;
  const docs = rule.path ? parseYaml(source) : rule.patch ? parseAllDocuments(rule.patch).map((d) => d.toJS() as Json) : [];
  if (docs.length !== 1 || !isObject(docs[0]))
    throw new Error(`${source}: expected one strategic merge patch (a mapping); JSON 6902 patches are not supported`);
  const patch = docs[0];
  const meta = isObject(patch.metadata) ? patch.metadata : {};
  const wanted = rule.target ?? { kind: patch.kind as string | undefined, name: meta.name as string | undefined };
  const matches = rendered.filter(
    ({ manifest }) =>
      (wanted.kind === undefined || manifest.kind === wanted.kind) &&
      (wanted.name === undefined || manifest.metadata.name === wanted.name) &&
      (wanted.group === undefined || resourceId(manifest).split('/')[0] === wanted.group),
  );
  if (matches.length !== 1)
    throw new Error(`${source}: the patch matches ${matches.length} resources (${JSON.stringify(wanted)}); it must match exactly one`);
  const match = matches[0]!;
  // A patch found by target may carry a placeholder name; the target keeps its own identity.
  const identity = { apiVersion: match.manifest.apiVersion, kind: match.manifest.kind, name: match.manifest.metadata.name };
  const merged = strategicMerge(match.manifest, patch) as Manifest;
  Object.assign(merged, { apiVersion: identity.apiVersion, kind: identity.kind });
  merged.metadata.name = identity.name;
  match.manifest = merged;
}

/** The `images` transformer: rewrite matching container images in a pod template. */
function applyImage(manifest: Manifest, rule: ImageRule): void {
  const podSpec = (manifest.spec as JsonObject | undefined)?.template as JsonObject | undefined;
  const spec = podSpec?.spec as JsonObject | undefined;
  if (!spec) return;
  for (const list of [spec.containers, spec.initContainers]) {
    if (!Array.isArray(list)) continue;
    for (const container of list) {
      if (!isObject(container) || typeof container.image !== 'string') continue;
      const { name, tag, digest } = splitImage(container.image);
      if (name !== rule.name) continue;
      const newName = rule.newName ?? name;
      if (rule.digest) container.image = `${newName}@${rule.digest}`;
      else if (rule.newTag) container.image = `${newName}:${rule.newTag}`;
      else container.image = `${newName}${digest ? `@${digest}` : tag ? `:${tag}` : ''}`;
    }
  }
}

function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const at = image.indexOf('@');
  if (at >= 0) return { name: image.slice(0, at), digest: image.slice(at + 1) };
  const colon = image.lastIndexOf(':');
  // A colon before the last slash belongs to a registry port (registry:5000/app), not a tag.
  if (colon > image.lastIndexOf('/')) return { name: image.slice(0, colon), tag: image.slice(colon + 1) };
  return { name: image };
}
