/**
 * Config loading: read, interpolate `${ENV}`, validate (adapter engines with the adapter schema),
 * resolve relative stdio commands and adapter paths against the config file's folder. Errors name the exact path and problem.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import { ConfigSchema, type GatewayConfig } from '../../core/config/schema.js';
import { validateAdapterEngines } from '../../adapters/engine-config.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[], readonly file?: string) {
    super(`${file ? `invalid config ${file}` : 'invalid config'}:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  config: GatewayConfig;
  file: string | undefined;
  /** Folder relative stdio commands resolve against. */
  baseDir: string;
}

/** `engines.1.url` → `engines[1].url` */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out.length === 0 ? String(part) : `.${String(part)}`;
  }
  return out || '(root)';
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  return issue.message;
}

/** Replace `${NAME}` / `${NAME:-default}` in every string with environment values (also used for adapter configs). */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, problems: string[], path: string): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined) return found;
      if (fallback !== undefined) return fallback;
      problems.push(`${path || '(root)'}: environment variable ${name} is not set`);
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolate(item, env, problems, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = interpolate(item, env, problems, path ? `${path}.${key}` : key);
    return out;
  }
  return value;
}

export function parseConfig(raw: unknown, options: { file?: string; baseDir: string; env?: NodeJS.ProcessEnv }): LoadedConfig {
  const problems: string[] = [];
  const interpolated = interpolate(raw, options.env ?? process.env, problems, '');
  if (problems.length > 0) throw new ConfigError(problems, options.file);
  const parsed = ConfigSchema.safeParse(interpolated);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${formatPath(issue.path)}: ${issueMessage(issue)}`), options.file);
  }
  const config = parsed.data;
  for (const engine of config.engines) {
    if (engine.transport !== 'stdio' || !engine.command) continue;
    const [program, ...args] = engine.command;
    // `node` means this very Node.js binary, so the bundled engines run on the gateway's runtime.
    const resolvedProgram = program === 'node' ? process.execPath : resolveRelative(program!, options.baseDir);
    engine.command = [resolvedProgram, ...args.map((arg) => (arg.startsWith('./') || arg.startsWith('../') ? resolve(options.baseDir, arg) : arg))];
    engine.cwd = engine.cwd ? resolve(options.baseDir, engine.cwd) : options.baseDir;
  }
  const adapterProblems = validateAdapterEngines(config.engines, options.baseDir);
  if (adapterProblems.length > 0) throw new ConfigError(adapterProblems, options.file);
  return { config, file: options.file, baseDir: options.baseDir };
}

function resolveRelative(program: string, baseDir: string): string {
  if (isAbsolute(program)) return program;
  return program.startsWith('./') || program.startsWith('../') || program.includes('/') ? resolve(baseDir, program) : program;
}

export function loadConfigFile(file: string, env?: NodeJS.ProcessEnv): LoadedConfig {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read file: ${(err as Error).message}`], path);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`not valid JSON: ${(err as Error).message}`], path);
  }
  return parseConfig(raw, { file: path, baseDir: dirname(path), env });
}
