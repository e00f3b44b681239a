/**
 * Opening an adapter from its config: the backend for its kind, opened and inspected, wrapped as
 * an RCP service. Also reads a standalone adapter config file (`${ENV}` interpolated).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { interpolate } from '../core/config/validate.js';
import type { RcpService } from '../core/service/contract.js';
import type { AdapterBackend, InspectionNote } from './backend.js';
import { AdapterConfigSchema, type AdapterConfig, type SqliteAdapterConfig } from './config.js';
import { cranfieldIndexDocuments } from '../demo/sqlite/cranfield.js';
import { buildFtsIndex } from './sqlite/index-builder.js';
import { readJsonl } from './sqlite/jsonl.js';
import { createPostgresBackend } from './postgres/backend.js';
import { createAdapterService } from './service.js';
import { createSqliteBackend } from './sqlite/backend.js';

export interface OpenedAdapter {
  config: AdapterConfig;
  service: RcpService;
  backend: AdapterBackend;
  notes: InspectionNote[];
  close(): Promise<void>;
}

export function createBackend(config: AdapterConfig, baseDir: string): AdapterBackend {
  return config.kind === 'postgres' ? createPostgresBackend(config, baseDir) : createSqliteBackend(config, baseDir);
}

/** Open the database and build the service; rejects when the database or its table is unusable. */
export async function openAdapter(config: AdapterConfig, baseDir: string): Promise<OpenedAdapter> {
  if (config.kind === 'sqlite') await seedSqlite(config, baseDir);
  const backend = createBackend(config, baseDir);
  try {
    await backend.open();
  } catch (err) {
    await backend.close().catch(() => undefined);
    throw err;
  }
  const notes = await backend
    .inspect()
    .catch((err: unknown) => [{ level: 'warning' as const, message: `inspection failed: ${(err as Error).message}` }]);
  return { config, backend, notes, service: createAdapterService(config, backend, { notes }), close: () => backend.close() };
}

/** Build a missing SQLite file from its configured seed (concurrent starts each build and rename; the last wins whole). */
async function seedSqlite(config: SqliteAdapterConfig, baseDir: string): Promise<void> {
  const file = resolve(baseDir, config.path);
  if (config.seed === undefined || existsSync(file)) return;
  mkdirSync(dirname(file), { recursive: true });
  const documents =
    config.seed === 'cranfield'
      ? cranfieldIndexDocuments()
      : readJsonl(
          config.seed.map((input) => resolve(baseDir, input)),
          process.stdin,
        );
  await buildFtsIndex(file, documents, config.table);
}

export class AdapterConfigError extends Error {
  constructor(
    readonly problems: string[],
    file: string | undefined,
  ) {
    super(`invalid adapter config${file ? ` ${file}` : ''}:\n  ${problems.join('\n  ')}`);
    this.name = 'AdapterConfigError';
  }
}

/** Validate a parsed adapter config (after `${ENV}` interpolation). */
export function parseAdapterConfig(raw: unknown, file?: string, env: NodeJS.ProcessEnv = process.env): AdapterConfig {
  const problems: string[] = [];
  const interpolated = interpolate(raw, env, problems, '');
  if (problems.length > 0) throw new AdapterConfigError(problems, file);
  const parsed = AdapterConfigSchema.safeParse(interpolated);
  if (!parsed.success) {
    throw new AdapterConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
      file,
    );
  }
  return parsed.data;
}

export function loadAdapterConfigFile(file: string, env?: NodeJS.ProcessEnv): { config: AdapterConfig; baseDir: string } {
  const path = resolve(file);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new AdapterConfigError([(err as Error).message], path);
  }
  return { config: parseAdapterConfig(raw, path, env), baseDir: dirname(path) };
}
