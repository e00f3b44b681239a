/**
 * A raw config value → a validated GatewayConfig, the same on every runtime: `${NAME}` and
 * `${NAME:-default}` replaced from the environment the runtime hands in (process.env on Node,
 * the Worker's env bindings at the edge), then the zod schema. Every problem is reported as
 * `path: message` (e.g. `engines[1].url: expected an http(s) URL`).
 */
import type { z } from 'zod';
import { ConfigSchema, type GatewayConfig } from './schema.js';

export class ConfigError extends Error {
  constructor(
    readonly problems: string[],
    readonly file?: string,
  ) {
    super(`${file ? `invalid config ${file}` : 'invalid config'}:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Variables `${NAME}` may name; values that are not strings (Worker bindings to services, KV, …) are not variables. */
export type ConfigEnv = Readonly<Record<string, unknown>>;

/** `engines.1.url` → `engines[1].url` */
export function formatPath(path: readonly PropertyKey[]): string {
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

/** Replace `${NAME}` / `${NAME:-default}` in every string with environment values. */
export function interpolate(value: unknown, env: ConfigEnv, problems: string[], path = ''): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (typeof found === 'string') return found;
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

/** Interpolate and validate; throws ConfigError listing every problem. */
export function validateConfig(raw: unknown, env: ConfigEnv, file?: string): GatewayConfig {
  const problems: string[] = [];
  const interpolated = interpolate(raw, env, problems);
  if (problems.length > 0) throw new ConfigError(problems, file);
  const parsed = ConfigSchema.safeParse(interpolated);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${formatPath(issue.path)}: ${issueMessage(issue)}`),
      file,
    );
  }
  return parsed.data;
}
