/**
 * Checks rendered Kubernetes manifests against the API schemas, offline, in two passes:
 *
 *  1. values — kubernetes-models' validators (compiled from the Kubernetes OpenAPI schemas):
 *     types, required fields, enums, formats such as resource quantities;
 *  2. field names — the Kubernetes OpenAPI schemas let unknown fields through (the API server
 *     drops them with a warning), so a typo such as `readinessProbes` would pass pass 1. Each
 *     manifest is therefore also type-checked by the TypeScript compiler against kubernetes-models'
 *     declarations (`const m: IDeployment = {...}`), whose excess-property check names every
 *     field the API does not know, at any depth — the equivalent of `kubectl --validate=strict`.
 *
 * apiVersion/kind map onto the package layout (`apps/v1` + `Deployment` →
 * `kubernetes-models/apps/v1/Deployment`); custom resources come from the packages in CRD_PACKAGES.
 */
import path from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../support/processes.js';
import type { Manifest } from './kustomize.js';

/** API groups of custom resources → the kubernetes-models package with their models. */
const CRD_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

/** One problem, named by the resource it is in. */
export interface ManifestProblem {
  resource: string;
  message: string;
}

interface ModelClass {
  new (data: unknown): { validate(): void };
}

function modulePath(manifest: Manifest): string {
  const [group, version] = manifest.apiVersion.includes('/') ? manifest.apiVersion.split('/') : ['', manifest.apiVersion];
  if (group === '') return `kubernetes-models/${version}/${manifest.kind}`;
  const crdPackage = CRD_PACKAGES[group!];
  return crdPackage ? `${crdPackage}/${group}/${version}/${manifest.kind}` : `kubernetes-models/${group}/${version}/${manifest.kind}`;
}

const label = (manifest: Manifest): string => `${manifest.kind}/${manifest.metadata.name}`;

/** Pass 1: kubernetes-models' own validation of every manifest. */
export async function validateValues(manifests: readonly Manifest[]): Promise<ManifestProblem[]> {
  const problems: ManifestProblem[] = [];
  for (const manifest of manifests) {
    let model: ModelClass | undefined;
    try {
      model = ((await import(modulePath(manifest))) as Record<string, ModelClass | undefined>)[manifest.kind];
    } catch {
      model = undefined;
    }
    if (!model) {
      problems.push({ resource: label(manifest), message: `no schema for ${manifest.apiVersion} ${manifest.kind}` });
      continue;
    }
    try {
      new model(manifest).validate();
    } catch (err) {
      problems.push({ resource: label(manifest), message: (err as Error).message });
    }
  }
  return problems;
}

/** Pass 2: the TypeScript compiler's excess-property check against the declared API types. */
export function validateFieldNames(manifests: readonly Manifest[]): ManifestProblem[] {
  // A virtual source in the repository root, so the compiler resolves packages from node_modules.
  const virtualFile = path.join(REPO_ROOT, '__manifests__.ts');
  const lines: string[] = [];
  const owners: Array<{ firstLine: number; manifest: Manifest }> = [];
  manifests.forEach((manifest, index) => {
    lines.push(`import type { I${manifest.kind} as T${index} } from ${JSON.stringify(modulePath(manifest))};`);
  });
  manifests.forEach((manifest, index) => {
    owners.push({ firstLine: lines.length, manifest });
    lines.push(...`export const m${index}: T${index} = ${JSON.stringify(manifest, null, 2)};`.split('\n'));
  });
  const source = lines.join('\n');

  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (file) => (file === virtualFile ? source : readFile(file));
  host.fileExists = (file) => file === virtualFile || ts.sys.fileExists(file);
  host.getSourceFile = (file, languageVersion, ...rest) =>
    file === virtualFile ? ts.createSourceFile(file, source, languageVersion, true) : getSourceFile(file, languageVersion, ...rest);
  const program = ts.createProgram({ rootNames: [virtualFile], options, host });
  const diagnostics = [...program.getSyntacticDiagnostics(), ...program.getSemanticDiagnostics()];

  return diagnostics.map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (diagnostic.file?.fileName !== virtualFile || diagnostic.start === undefined) return { resource: '(checker)', message };
    const line = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line;
    const owner = [...owners].reverse().find((candidate) => candidate.firstLine <= line);
    if (!owner) return { resource: '(imports)', message };
    return { resource: label(owner.manifest), message: `${message} (${fieldPath(source, line, owner.firstLine)})` };
  });
}

/** The `a.b.c` path of the property on `line`, read back from the indented JSON. */
function fieldPath(source: string, line: number, firstLine: number): string {
  const all = source.split('\n');
  const pathParts: string[] = [];
  let indent = Number.POSITIVE_INFINITY;
  for (let at = line; at > firstLine; at--) {
    const text = all[at]!;
    const match = /^(\s*)"([^"]+)":/.exec(text);
    if (match && match[1]!.length < indent) {
      pathParts.unshift(match[2]!);
      indent = match[1]!.length;
    } else if (/^\s*[[{]/.test(text) && text.search(/\S/) < indent) {
      indent = text.search(/\S/);
      pathParts.unshift('[]');
    }
  }
  return pathParts.join('.').replace(/\.\[\]/g, '[]');
}

/** Both passes. */
export async function validateManifests(manifests: readonly Manifest[]): Promise<ManifestProblem[]> {
  return [...(await validateValues(manifests)), ...validateFieldNames(manifests)];
}
