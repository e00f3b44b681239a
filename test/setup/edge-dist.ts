/**
 * Vitest global setup of the end-to-end tier, beside dist.ts: the edge suites (test/edge) run the
 * bundles in dist-edge/, so before any of them runs those must be the bundles of the src/ on
 * disk. They are rebuilt (`node scripts/build-edge.mjs`, no bundled config) when one is missing
 * or older than a source file, the lockfile or the build script; otherwise nothing is done.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUNDLES = ['worker.js', 'deno.js', 'bun.js'].map((name) => path.join(ROOT, 'dist-edge', name));
const INPUTS = [path.join(ROOT, 'package-lock.json'), path.join(ROOT, 'scripts/build-edge.mjs')];

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(full) : entry.name.endsWith('.ts') ? statSync(full).mtimeMs : 0);
  }
  return newest;
}

/** Why dist-edge/ is not the build of src/ (undefined: it is). */
export function edgeStaleness(): string | undefined {
  const missing = BUNDLES.find((file) => !existsSync(file));
  if (missing) return `${path.relative(ROOT, missing)} is missing`;
  const built = Math.min(...BUNDLES.map((file) => statSync(file).mtimeMs));
  if (newestSource(path.join(ROOT, 'src')) > built) return 'a source file changed after the last edge build';
  const changed = INPUTS.find((file) => statSync(file).mtimeMs > built);
  return changed === undefined ? undefined : `${path.relative(ROOT, changed)} changed after the last edge build`;
}

export default function buildEdgeIfStale(): void {
  const why = edgeStaleness();
  if (why === undefined) return;
  console.log(`dist-edge/ is stale (${why}): building with scripts/build-edge.mjs`);
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts/build-edge.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`building dist-edge/ failed (exit ${build.status ?? build.signal})`);
}
