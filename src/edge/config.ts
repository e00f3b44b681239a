/**
 * The gateway config at the edge: the same schema and `${NAME}` interpolation as on Node (from
 * the Worker's env bindings, or Deno's/Bun's environment), plus what an edge runtime cannot do.
 * There are no child processes and no database drivers, so a stdio or adapter engine is a config
 * error naming its entry; and where one deployment runs as many isolates (Workers), a pagination
 * cursor signed by one isolate must verify on any other, so the cursor secret is required there.
 */
import type { GatewayConfig } from '../core/config/schema.js';
import { ConfigError, validateConfig, type ConfigEnv } from '../core/config/validate.js';
import { isJsonObject } from '../core/protocol/jsonrpc.js';

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
  // The edge's own rules read the raw entries, so they are reported with the schema's problems, not after them.
  const edgeProblems = edgeRuleProblems(raw, rules);
  let config: GatewayConfig;
  try {
    config = validateConfig(raw, env, origin);
  } catch (err) {
    if (err instanceof ConfigError && edgeProblems.length > 0) throw new ConfigError([...err.problems, ...edgeProblems], origin);
    throw err;
  }
  if (edgeProblems.length > 0) throw new ConfigError(edgeProblems, origin);
  return config;
}

/** Why each engine transport other than HTTP cannot run at the edge. */
const NOT_AT_THE_EDGE: Readonly<Partial<Record<string, string>>> = {
  stdio: 'stdio engines cannot run at the edge (no child processes)',
  adapter: 'adapter engines cannot run at the edge (their database drivers need Node)',
};

function edgeRuleProblems(raw: unknown, rules: EdgeConfigRules): string[] {
  const problems: string[] = [];
  const config = isJsonObject(raw) ? raw : {};
  if (Array.isArray(config.engines)) {
    config.engines.forEach((engine, index) => {
      if (!isJsonObject(engine) || typeof engine.transport !== 'string') return;
      const why = NOT_AT_THE_EDGE[engine.transport];
      if (why !== undefined) problems.push(`engines[${index}].transport: ${why}; serve "${String(engine.id)}" over HTTP`);
    });
  }
  const gateway = isJsonObject(config.gateway) ? config.gateway : {};
  const quotas = isJsonObject(gateway.quotas) ? gateway.quotas : {};
  if (quotas.store === 'redis') {
    problems.push(
      'gateway.quotas.store: "redis" is served by the Node gateway only; at the edge quotas are counted per isolate or process (store "memory")',
    );
  }
  // With pagination off no cursor is sealed or opened, so isolates have nothing to agree on.
  if (rules.requireCursorSecret && gateway.cursorSecret === undefined && gateway.pagination !== false) {
    problems.push(
      'gateway.cursorSecret: required at the edge: every isolate must sign and verify pagination cursors with the same key (set it from a secret, e.g. "${RCPGW_CURSOR_SECRET}")',
    );
  }
  return problems;
}
