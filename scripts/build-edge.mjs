#!/usr/bin/env node
// Bundle the edge entries with esbuild into dist-edge/: worker.js (Cloudflare Workers / workerd),
// deno.js and bun.js. Each is one ESM file holding the core and its dependencies; only `node:*`
// built-ins stay imports (workerd provides the few used under `nodejs_compat`; Deno and Bun have
// them). `--config FILE` bundles a config into worker.js, validated here with the edge rules so
// a bad one fails the build rather than the first request. Prints each bundle's size.
//
//   node scripts/build-edge.mjs [--config FILE] [--outdir DIR]
import { build } from 'esbuild';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
};
const outdir = path.resolve(option('outdir') ?? path.join(root, 'dist-edge'));

/** The raw value at a reported path such as `engines[1].url`. */
function valueAt(raw, reported) {
  return reported
    .split(/\.|\[|\]/)
    .filter(Boolean)
    .reduce((value, key) => (value == null ? undefined : value[key]), raw);
}

/**
 * The config to bundle into worker.js, checked as the worker will check it (needs `npm run build`
 * first). `${NAME}` stays in the bundle and is read from the Worker's bindings at run time, so a
 * field holding one is checked there, not here.
 */
async function bundledConfig(file) {
  if (file === undefined) return undefined;
  const { edgeConfig } = await import(path.join(root, 'dist/edge/config.js'));
  const { ConfigError } = await import(path.join(root, 'dist/core/config/validate.js'));
  let raw;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
    edgeConfig(raw, new Proxy({}, { get: (_target, name) => `\${${String(name)}}` }), { requireCursorSecret: true }, file);
    return raw;
  } catch (err) {
    if (!(err instanceof ConfigError)) {
      console.error(`cannot bundle ${file}: ${err.message}`);
      process.exit(2);
    }
    const problems = err.problems.filter((problem) => !String(valueAt(raw, problem.split(':')[0]) ?? '').includes('${'));
    if (problems.length === 0) return raw;
    console.error(`invalid config ${file}:\n  ${problems.join('\n  ')}`);
    process.exit(2);
  }
}

const config = await bundledConfig(option('config'));
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const common = {
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  mainFields: ['module', 'main'],
  external: ['node:*'],
  minify: true,
  sourcemap: 'external',
  logLevel: 'warning',
  // The version `initialize` reports, as the Node gateway reads it from package.json.
  define: { RCPGW_VERSION: JSON.stringify(version) },
};
const entries = [
  {
    name: 'worker',
    conditions: ['workerd', 'worker', 'browser'],
    define: { RCPGW_BUNDLED_CONFIG: config === undefined ? 'undefined' : JSON.stringify(config) },
  },
  { name: 'deno', conditions: ['deno', 'import'] },
  { name: 'bun', conditions: ['bun', 'import'] },
];
for (const entry of entries) {
  await build({
    ...common,
    entryPoints: [path.join(root, 'src/edge', `${entry.name}.ts`)],
    outfile: path.join(outdir, `${entry.name}.js`),
    conditions: entry.conditions,
    define: { ...common.define, ...entry.define },
  });
  const file = path.join(outdir, `${entry.name}.js`);
  const bytes = statSync(file).size;
  const gzipped = gzipSync(readFileSync(file)).length;
  console.log(`${path.relative(root, file)}: ${(bytes / 1024).toFixed(1)} KiB (${(gzipped / 1024).toFixed(1)} KiB gzip)`);
}
