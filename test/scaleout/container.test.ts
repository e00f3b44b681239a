/**
 * deploy/Dockerfile and .dockerignore, checked statically: no Docker engine runs on the machines
 * this suite runs on, so the image is never built here. What can be checked without one is: the
 * Dockerfile lints clean (dockerfile-utils, the validator behind the Dockerfile language server),
 * its stages do what the image promises (compile in one stage, production install in the runtime
 * stage, non-root, HEALTHCHECK), every file it copies is in the build context, the compiled code
 * imports only production dependencies, and its HEALTHCHECK command really tells up from down.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, startGateway, stdioEngineCommand } from '../support/processes.js';
import { freePort } from './support/ports.js';
import { argumentsOf, keptInContext, stagesOf } from './support/dockerfile.js';

const DOCKERFILE = readFileSync(path.join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8');
const DOCKERIGNORE = readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8');
const stages = stagesOf(DOCKERFILE);
const runtime = stages.at(-1)!;

function* jsFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* jsFiles(full);
    else if (entry.name.endsWith('.js')) yield full;
  }
}

/** `lodash/fp` → `lodash`, `@scope/pkg/x` → `@scope/pkg`. */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

describe('deploy/Dockerfile', () => {
  it('lints clean', () => {
    expect(validate(DOCKERFILE).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
  });

  it('the linter catches a mistyped instruction and a bad flag', () => {
    const broken = DOCKERFILE.replace('COPY src ./src', 'COPPY src ./src').replace('--interval=10s', '--intervall=10s');
    const messages = validate(broken).map((d) => d.message);
    expect(messages).toEqual(expect.arrayContaining([expect.stringMatching(/COPPY/i), expect.stringMatching(/intervall/i)]));
  });

  it('compiles in a build stage; the runtime takes production dependencies only, from their own stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    const build = stages.find((s) => s.name === 'build');
    expect(argumentsOf(build!, 'RUN').join('\n')).toContain('npm run build');
    const deps = stages.find((s) => s.name === 'deps');
    expect(argumentsOf(deps!, 'RUN').join('\n')).toMatch(/npm ci --omit=dev/);
    // The runtime takes the compiled output from the build stage and node_modules from the
    // production install, never the build stage's node_modules (dev tools) and no compiler.
    const copies = argumentsOf(runtime, 'COPY');
    expect(copies).toContain('--from=build /app/dist ./dist');
    expect(copies).toContain('--from=deps /app/node_modules ./node_modules');
    expect(copies.filter((args) => args.includes('node_modules'))).toEqual(['--from=deps /app/node_modules ./node_modules']);
    expect(argumentsOf(runtime, 'RUN').join('\n')).not.toMatch(/apt-get|g\+\+|npm ci(?! --omit=dev)/);
  });

  it('runs the install script of every production dependency that has one (native addons)', () => {
    // The production install skips install scripts (the root `prepare` would compile); a package
    // that needs its own (better-sqlite3 fetches or builds its binding) is then `npm rebuild`-ed.
    // Without that the SQLite adapter failed in the image: "Could not locate the bindings file".
    const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; hasInstallScript?: boolean }>;
    };
    const needed = Object.entries(lock.packages)
      .filter(([where, entry]) => where !== '' && entry.dev !== true && entry.hasInstallScript === true)
      .map(([where]) => where.replace(/^.*node_modules\//, ''));
    expect(needed).toContain('better-sqlite3');
    const install = argumentsOf(
      stages.find((s) => s.name === 'deps')!,
      'RUN',
    ).join('\n');
    expect(install).toContain('--ignore-scripts');
    const rebuilt = [...install.matchAll(/npm rebuild((?:\s+[^\s&|;\\]+)+)/g)].flatMap((m) => m[1]!.trim().split(/\s+/));
    expect(rebuilt.sort()).toEqual([...needed].sort());
  });

  it('runs a Node.js line the end-to-end tier is run on, pinned to the patch', () => {
    const image = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-\S+$/m.exec(DOCKERFILE);
    expect(image, 'ARG NODE_IMAGE=node:<major.minor.patch>-<variant>').not.toBeNull();
    const script = readFileSync(path.join(REPO_ROOT, 'scripts/test-node-lines.sh'), 'utf8');
    const lines = /LINES="\$\{RCPGW_NODE_LINES:-([^}]+)\}"/.exec(script)![1]!.split(/\s+/);
    expect(lines).toContain(image![1]);
    expect(stages.every((s) => s.image === '${NODE_IMAGE}')).toBe(true);
  });

  it('runs as a non-root user, with a HEALTHCHECK, serving on all interfaces', () => {
    const user = argumentsOf(runtime, 'USER');
    expect(user).toHaveLength(1);
    expect(['root', '0']).not.toContain(user[0]!.split(':')[0]);
    expect(argumentsOf(runtime, 'HEALTHCHECK')).toEqual([expect.stringMatching(/^--interval=\S+ .*CMD /)]);
    expect(argumentsOf(runtime, 'ENTRYPOINT')[0]).toContain('"dist/cli/main.js", "serve", "--host", "0.0.0.0"');
  });

  it('copies only files that exist and that .dockerignore keeps in the build context', () => {
    const sources = stages
      .flatMap((s) => argumentsOf(s, 'COPY'))
      .filter((args) => !args.startsWith('--from'))
      .flatMap((args) =>
        args
          .split(/\s+/)
          .filter((word) => !word.startsWith('--'))
          .slice(0, -1),
      );
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(existsSync(path.join(REPO_ROOT, source)), source).toBe(true);
      expect(keptInContext(DOCKERIGNORE, source), source).toBe(true);
      expect(keptInContext(DOCKERIGNORE, `${source}/some/file`), `${source}/…`).toBe(true);
    }
    for (const outside of [
      'node_modules/hono/package.json',
      'dist/cli/main.js',
      'test/scaleout/container.test.ts',
      '.git/HEAD',
      'deploy/Dockerfile',
    ]) {
      expect(keptInContext(DOCKERIGNORE, outside), outside).toBe(false);
    }
  });

  it('the compiled gateway imports nothing the production install leaves out', () => {
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const builtins = new Set(builtinModules);
    const missing = new Set<string>();
    const found = new Set<string>();
    for (const file of jsFiles(path.join(REPO_ROOT, 'dist'))) {
      const code = readFileSync(file, 'utf8');
      // `import … from 'x'`, `export … from 'x'` (possibly over several lines), `import 'x'`, `import('x')`.
      for (const match of code.matchAll(/(?:^\s*(?:import|export)\s[^;]*?\bfrom\s*|^\s*import\s*|\bimport\(\s*)['"]([^'"]+)['"]/gm)) {
        const specifier = match[1]!;
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtins.has(specifier)) continue;
        found.add(packageOf(specifier));
        if (!manifest.dependencies[packageOf(specifier)]) missing.add(`${packageOf(specifier)} (${path.relative(REPO_ROOT, file)})`);
      }
    }
    expect([...found]).toEqual(expect.arrayContaining(['hono', 'prom-client', 'pino', 'undici']));
    expect([...missing]).toEqual([]);
  });

  it('its HEALTHCHECK command passes against a live gateway and fails against a closed port', async () => {
    const healthcheck = argumentsOf(runtime, 'HEALTHCHECK')[0]!;
    const command = JSON.parse(healthcheck.slice(healthcheck.indexOf('CMD') + 3).trim()) as string[];
    expect(command[0]).toBe('node');
    const run = (port: number): number | null =>
      spawnSync(process.execPath, command.slice(1), { env: { ...process.env, PORT: String(port) }, timeout: 10_000 }).status;
    const gw = await startGateway({
      config: { engines: [{ id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local']) }] },
    });
    try {
      expect(run(Number(new URL(gw.url).port))).toBe(0);
    } finally {
      await gw.stop();
    }
    expect(run(await freePort('127.0.0.1'))).toBe(1);
  });
});
