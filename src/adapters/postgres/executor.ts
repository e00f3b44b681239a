/**
 * Where PostgreSQL SQL runs: a server through node-postgres (`pg`, a pool), or PGlite (WASM
 * PostgreSQL in this process, for an embedded database with no server). The adapter's SQL is the
 * same for both; only the executor differs. Driver failures become RCP errors here: the database
 * being unreachable is -32010 (retryable), a search over its time budget -32014, anything else
 * -32603 without the driver's text (it can quote the statement).
 */
import { resolve } from 'node:path';
import { ErrorCode, RcpError } from '../../core/protocol/errors.js';
import type { PgConnection } from '../config.js';

export type PgRow = Record<string, unknown>;

export interface PgExecutor {
  query(sql: string, params: readonly unknown[]): Promise<PgRow[]>;
  close(): Promise<void>;
}

export interface PgExecutorOptions {
  connection: PgConnection;
  maxConnections: number;
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  /** Folder a relative PGlite data folder resolves against. */
  baseDir: string;
}

export async function createPgExecutor(options: PgExecutorOptions): Promise<PgExecutor> {
  const { connection } = options;
  if ('pglite' in connection) return pgliteExecutor(connection.pglite, options.baseDir);
  // Loaded on demand: a gateway with no PostgreSQL engine never loads the driver.
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    ...('url' in connection ? { connectionString: connection.url } : connection),
    max: options.maxConnections,
    statement_timeout: options.statementTimeoutMs,
    connectionTimeoutMillis: options.connectTimeoutMs,
    application_name: 'rcp-gateway-adapter',
  });
  // An idle client losing its server (restart, failover) must not crash the process; the pool
  // drops it and the next search connects anew.
  pool.on('error', () => undefined);
  return {
    async query(sql, params) {
      try {
        return (await pool.query<PgRow>(sql, [...params])).rows;
      } catch (err) {
        throw toRcpError(err);
      }
    },
    close: () => pool.end(),
  };
}

async function pgliteExecutor(location: string, baseDir: string): Promise<PgExecutor> {
  const { PGlite } = await import('@electric-sql/pglite');
  const dataDir = location.startsWith('memory://') ? location : resolve(baseDir, location);
  const db = await PGlite.create(dataDir);
  return {
    async query(sql, params) {
      try {
        return (await db.query<PgRow>(sql, [...params])).rows;
      } catch (err) {
        throw toRcpError(err);
      }
    },
    close: () => db.close(),
  };
}

/** SQLSTATE classes meaning the server or the connection is gone, not the statement wrong. */
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-3])/;
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

export function toRcpError(err: unknown): RcpError {
  if (err instanceof RcpError) return err;
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (code === '57014') return new RcpError(ErrorCode.Timeout, 'the search exceeded its time budget', { retryable: true });
  if (
    (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end/i.test(
      message,
    )
  ) {
    return new RcpError(ErrorCode.BackendUnavailable, 'the database is unavailable', {
      retryable: true,
      detail: typeof code === 'string' ? code : 'connection failed',
    });
  }
  return new RcpError(ErrorCode.InternalError, 'the database rejected the search', {
    ...(typeof code === 'string' ? { detail: `SQLSTATE ${code}` } : {}),
  });
}
