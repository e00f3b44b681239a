/**
 * The gateway config at the edge: the same schema and `${NAME}` interpolation as on Node (from
 * the Worker's env bindings, or Deno's/Bun's environment), plus what an edge runtime cannot do.
 * There are no child processes, so a stdio engine is a config error naming its entry; and where
 * one deployment runs as many isolates (Workers), a pagination cursor signed by one isolate must
 * verify on any other, so the cursor secret is required there.
 */
import type { GatewayConfig } from '../core/config/schema.js';
import { ConfigError, validateConfig, type ConfigEnv } from '../core/config/validate.js';

export interface EdgeConfigRules {
  /** Many isolates serve one deployment: cursors need a shared secret (Workers). */
  requireCursorSecret: boolean;
}

/** A config given as JSON text (an env binding, a file) or already parsed (bundled at build time). */
export function edgeConfig(source: string | object, env: ConfigEnv, rules: EdgeConfigRules, origin = 'RCPGW_CONFIG'): GatewayConfig {
  let raw: unknown = source;
  if (typeof source === 'string') {
    try {
      raw = JSON.parse(source);
    } catch (err) {
      throw new ConfigError([`not valid JSON: ${(err as Error).message}`], origin);
    }
  }
  const config = validateConfig(raw, env, origin);
  const problems: string[] = [];
  config.engines.forEach((engine, index) => {
    if (engine.transport === 'stdio') problems.push(`engines[${index}].transport: stdio engines cannot run at the edge (no child processes); serve "${engine.id}" over HTTP`);
  });
  if (rules.requireCursorSecret && config.gateway.cursorSecret === undefined) {
    problems.push('gateway.cursorSecret: required at the edge: every isolate must sign and verify pagination cursors with the same key (set it from a secret, e.g. "${RCPGW_CURSOR_SECRET}")');
  }
  if (problems.length > 0) throw new ConfigError(problems, origin);
  return config;
}
