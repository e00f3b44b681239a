/**
 * The runtime-neutral core: everything reachable from src/core through imports must run on any
 * JavaScript runtime with web standards (fetch, streams, WebCrypto's getRandomValues). So no
 * Node builtin, no Node-only package, no path into src/node, src/cli or src/demo, and only
 * packages known to be portable. eslint.config.js enforces the same per file; this walks the
 * whole graph, so a re-export or a dynamic import() cannot slip past.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const CORE = path.join(SRC, 'core');

/** Packages the core may import: web-standard or pure JavaScript. Check a package before adding it. */
const PORTABLE_PACKAGES = new Set([
  'hono',
  'zod',
  'opossum',
  'p-limit',
  'eventsource-parser',
  'minisearch',
  '@noble/hashes',
  '@scure/base',
  'pure-rand',
  'jose', // WebCrypto and fetch only (one universal build, no node: imports)
]);
const NODE_BUILTINS = new Set(builtinModules);

interface Violation {
  file: string;
  specifier: string;
  reason: string;
}

type ReadSource = (file: string) => string | undefined;

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** A relative specifier as the .ts source file it names (ESM imports spell the emitted .js). */
function resolveRelative(from: string, specifier: string, read: ReadSource): string {
  const target = path.resolve(path.dirname(from), specifier);
  const candidates = [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, path.join(target, 'index.ts')];
  return candidates.find((candidate) => read(candidate) !== undefined) ?? target;
}

function classifyBare(specifier: string): string | undefined {
  if (specifier.startsWith('node:') || NODE_BUILTINS.has(specifier) || NODE_BUILTINS.has(packageName(specifier))) return 'Node builtin';
  if (!PORTABLE_PACKAGES.has(packageName(specifier))) return `package ${packageName(specifier)} is not on the portable list`;
  return undefined;
}

/** Every import reachable from `entries` that leaves the runtime-neutral core. */
function coreViolations(entries: readonly string[], read: ReadSource, coreRoot: string): Violation[] {
  const violations: Violation[] = [];
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = read(file);
    if (text === undefined) continue;
    // All static imports and re-exports (type-only ones too), import() and require() with literal names.
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      const shown = path.relative(path.dirname(coreRoot), file);
      if (!specifier.startsWith('.')) {
        const reason = classifyBare(specifier);
        if (reason) violations.push({ file: shown, specifier, reason });
        continue;
      }
      const target = resolveRelative(file, specifier, read);
      if (target !== coreRoot && !target.startsWith(`${coreRoot}${path.sep}`)) {
        violations.push({ file: shown, specifier, reason: `leaves src/core (${path.relative(path.dirname(coreRoot), target)})` });
        continue;
      }
      queue.push(target);
    }
  }
  return violations;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const readDisk: ReadSource = (file) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

describe('runtime-neutral core', () => {
  it('reaches no Node builtin, Node-only package, or src/node, src/cli or src/demo module', () => {
    const entries = sourceFiles(CORE);
    expect(entries.length).toBeGreaterThan(30);
    const found = coreViolations(entries, readDisk, CORE).map((v) => `${v.file}: '${v.specifier}' (${v.reason})`);
    expect(found).toEqual([]);
  });

  it('the walk finds what it must refuse, through any kind of import', () => {
    const root = '/repo/src/core';
    const files: Record<string, string> = {
      [`${root}/a.ts`]:
        "import { b } from './b.js';\nimport { z } from 'zod';\nimport { Hono } from 'hono';\nimport { sha256 } from '@noble/hashes/sha2.js';\nexport { b };\n",
      [`${root}/b.ts`]: "export * from './deep/c.js';\nimport type { Logger } from 'pino';\nexport const b = 1;\n",
      [`${root}/deep/c.ts`]:
        "import { readFile } from 'fs/promises';\nexport const c = () => import('node:crypto');\nexport { x } from '../../node/x.js';\nimport 'left-pad';\n",
      '/repo/src/node/x.ts': "import { createHash } from 'node:crypto';\nexport const x = createHash;\n",
    };
    const found = coreViolations([`${root}/a.ts`], (file) => files[file], root)
      .map((v) => `${v.file} ${v.specifier}`)
      .sort();
    expect(found).toEqual([
      'core/b.ts pino',
      'core/deep/c.ts ../../node/x.js',
      'core/deep/c.ts fs/promises',
      'core/deep/c.ts left-pad',
      'core/deep/c.ts node:crypto',
    ]);
  });
});
