/**
 * Config loading: read the file, interpolate `${ENV}` and validate (core/config/validate.ts, the
 * same on every runtime), check adapter engines with the adapter schema, resolve relative stdio
 * commands and adapter paths against the config file's folder. Errors name the exact path and problem.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { GatewayConfig } from '../../core/config/schema.js';
import { ConfigError, validateConfig } from '../../core/config/validate.js';
import { validateAdapterEngines } from '../../adapters/engine-config.js';

export { ConfigError };

export interface LoadedConfig {
  config: GatewayConfig;
  file: string | undefined;
  /** Folder relative stdio commands resolve against. */
  baseDir: string;
}

export function parseConfig(raw: unknown, options: { file?: string; baseDir: string; env?: NodeJS.ProcessEnv }): LoadedConfig {
  const config = validateConfig(raw, options.env ?? process.env, options.file);
  for (const engine of config.engines) {
    if (engine.transport !== 'stdio' || !engine.command) continue;
    const [program, ...args] = engine.command;
    // `node` means this very Node.js binary, so the bundled engines run on the gateway's runtime.
    const resolvedProgram = program === 'node' ? process.execPath : resolveRelative(program!, options.baseDir);
    engine.command = [
      resolvedProgram,
      ...args.map((arg) => (arg.startsWith('./') || arg.startsWith('../') ? resolve(options.baseDir, arg) : arg)),
    ];
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
