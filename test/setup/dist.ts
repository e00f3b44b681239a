/**
 * Vitest global setup of the end-to-end tier: its suites spawn the gateway from dist/, so before
 * any of them runs, dist/ must be the build of the src/ on disk. It is rebuilt
 * (`tsc -p tsconfig.build.json`) when a source file has no output or an output older than it, or
 * a build setting changed after the last build; otherwise nothing is done. This is the build step
 * of `npm test`: a tree `npm ci` just built (its `prepare` script) is not built again, an edited
 * one is built once, and `npx vitest run test/x` never tests stale code.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = path.join(ROOT, 'src');
const DIST = path.join(ROOT, 'dist');
const BUILD_SETTINGS = ['tsconfig.json', 'tsconfig.build.json'];

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(full);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield full;
  }
}

const mtime = (file: string): number => statSync(file).mtimeMs;

/** Why dist/ is not the build of src/ (undefined: it is). */
export function staleness(): string | undefined {
  let oldestOutput = Infinity;
  for (const source of sourceFiles(SRC)) {
    const output = path.join(DIST, path.relative(SRC, source)).replace(/\.ts$/, '.js');
    if (!existsSync(output)) return `${path.relative(ROOT, output)} is missing`;
    const built = mtime(output);
    if (built < mtime(source)) return `${path.relative(ROOT, source)} changed after its build`;
    oldestOutput = Math.min(oldestOutput, built);
  }
  const changed = BUILD_SETTINGS.find((file) => existsSync(path.join(ROOT, file)) && mtime(path.join(ROOT, file)) > oldestOutput);
  return changed === undefined ? undefined : `${changed} changed after the last build`;
}

export default function buildDistIfStale(): void {
  const why = staleness();
  if (why === undefined) return;
  console.log(`dist/ is stale (${why}): building with tsc -p tsconfig.build.json`);
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`building dist/ failed (tsc exit ${build.status ?? build.signal})`);
}
