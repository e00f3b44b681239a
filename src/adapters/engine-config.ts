/**
 * Gateway engine entries with `"transport": "adapter"`: their `adapter` object is validated here
 * with the adapter schema (the core schema only checks it names a kind), and relative paths in it
 * resolve against the config file's folder (kept as the entry's `cwd`).
 */
import { resolve } from 'node:path';
import type { EngineConfig } from '../core/config/schema.js';
import { AdapterConfigSchema, type AdapterConfig } from './config.js';

/** Validate every adapter entry in place; returns `engines[i].adapter.…: problem` lines. */
export function validateAdapterEngines(engines: EngineConfig[], baseDir: string): string[] {
  const problems: string[] = [];
  engines.forEach((engine, index) => {
    if (engine.transport !== 'adapter') return;
    const parsed = AdapterConfigSchema.safeParse(engine.adapter);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push(
          `engines[${index}].adapter${issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${issue.message}`,
        );
      return;
    }
    engine.adapter = parsed.data;
    engine.cwd = engine.cwd ? resolve(baseDir, engine.cwd) : baseDir;
  });
  return problems;
}

/** The validated adapter settings of an adapter engine entry. */
export function adapterOf(engine: EngineConfig): AdapterConfig {
  const parsed = AdapterConfigSchema.safeParse(engine.adapter);
  if (!parsed.success) throw new Error(`engine ${engine.id}: invalid adapter settings`);
  return parsed.data;
}
