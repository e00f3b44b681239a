/**
 * `rcp-gateway adapter <kind> …`: a database adapter as a standalone RCP server (stdio or HTTP),
 * a check of its database, and `sqlite --index` to build an FTS5 database from JSON lines.
 * Exit codes: 0 done, 1 the database cannot be used, 2 usage or config error.
 */
import { parseArgs } from 'node:util';
import { dirname, resolve } from 'node:path';
import { GatewaySchema } from '../core/config/schema.js';
import { ADAPTER_KINDS, type AdapterConfig, type AdapterKind } from '../adapters/config.js';
import { AdapterConfigError, loadAdapterConfigFile, openAdapter, parseAdapterConfig, type OpenedAdapter } from '../adapters/open.js';
import { buildFtsIndex } from '../adapters/sqlite/index-builder.js';
import { JsonlError, readJsonl } from '../adapters/sqlite/jsonl.js';
import { createLogger } from '../node/observability/log.js';
import { startHttpServer } from '../node/server/listen.js';
import { serveStdio } from '../node/server/stdio.js';

export const ADAPTER_HELP = `rcp-gateway adapter <postgres|sqlite> … — a database as an RCP engine

Serve:
  rcp-gateway adapter <kind> --config FILE --stdio            RCP over stdin/stdout
  rcp-gateway adapter <kind> --config FILE --http PORT [--host H]   RCP over HTTP at /rcp
  rcp-gateway adapter sqlite --db FILE --stdio|--http PORT    an FTS5 file built by --index
Check:
  rcp-gateway adapter <kind> --config FILE --check            open the database, report index use
Index:
  rcp-gateway adapter sqlite --index --db FILE [--table NAME] INPUT...
      build an FTS5 database from JSON lines (files, folders of *.jsonl, or - for stdin): one
      object per line with "id", "text", optional "title", "uri", "meta"; other keys are
      metadata. Prints an adapter config declaring the metadata fields as filters.

The config file is one adapter entry (see docs/adapters.md); \${ENV} is replaced from the
environment, so secrets such as connection URLs stay out of it.
`;

const OPTIONS = {
  config: { type: 'string' },
  db: { type: 'string' },
  table: { type: 'string' },
  stdio: { type: 'boolean' },
  http: { type: 'string' },
  host: { type: 'string' },
  check: { type: 'boolean' },
  index: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

class UsageError extends Error {}

export async function adapterCommand(argv: string[]): Promise<number> {
  const [kind, ...rest] = argv;
  if (kind === undefined || kind === '--help' || kind === '-h') {
    process.stdout.write(ADAPTER_HELP);
    return kind === undefined ? 2 : 0;
  }
  try {
    if (!(ADAPTER_KINDS as readonly string[]).includes(kind))
      throw new UsageError(`unknown adapter kind "${kind}" (expected ${ADAPTER_KINDS.join(' or ')})`);
    const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, allowPositionals: true });
    if (values.help) {
      process.stdout.write(ADAPTER_HELP);
      return 0;
    }
    if (values.index) return await indexCommand(kind as AdapterKind, values.db, values.table, positionals);
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const { config, baseDir } = adapterConfig(kind as AdapterKind, values.config, values.db, values.table);
    if (values.check) return await check(config, baseDir);
    if (values.stdio === (values.http !== undefined)) throw new UsageError('give exactly one of --stdio or --http PORT');
    const adapter = await openAdapter(config, baseDir).catch((err: unknown) => {
      process.stderr.write(`rcp-gateway adapter: ${(err as Error).message}\n`);
      return undefined;
    });
    if (!adapter) return 1;
    return values.stdio ? await serveOverStdio(adapter) : await serveOverHttp(adapter, values.http!, values.host);
  } catch (err) {
    if (err instanceof UsageError || err instanceof AdapterConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`rcp-gateway adapter: ${(err as Error).message}\n\n${ADAPTER_HELP}`);
      return 2;
    }
    throw err;
  }
}

function adapterConfig(
  kind: AdapterKind,
  file: string | undefined,
  db: string | undefined,
  table: string | undefined,
): { config: AdapterConfig; baseDir: string } {
  if (file !== undefined) {
    const loaded = loadAdapterConfigFile(file);
    if (loaded.config.kind !== kind) throw new UsageError(`${file} configures a ${loaded.config.kind} adapter, not ${kind}`);
    return loaded;
  }
  if (kind === 'sqlite' && db !== undefined) {
    return { config: parseAdapterConfig({ kind, path: resolve(db), ...(table ? { table } : {}) }), baseDir: dirname(resolve(db)) };
  }
  throw new UsageError(kind === 'sqlite' ? 'give --config FILE or --db FILE' : 'give --config FILE');
}

async function check(config: AdapterConfig, baseDir: string): Promise<number> {
  let adapter: OpenedAdapter;
  try {
    adapter = await openAdapter(config, baseDir);
  } catch (err) {
    process.stdout.write(`${config.kind}: NOT usable: ${(err as Error).message}\n`);
    return 1;
  }
  const described = adapter.service.describe();
  process.stdout.write(`${described.server.name}: usable; capabilities ${Object.keys(described.capabilities).join(', ')}\n`);
  for (const note of adapter.notes) process.stdout.write(`  ${note.level}: ${note.message}\n`);
  await adapter.close();
  return 0;
}

async function indexCommand(kind: AdapterKind, db: string | undefined, table: string | undefined, inputs: string[]): Promise<number> {
  if (kind !== 'sqlite') throw new UsageError('--index builds SQLite databases only');
  if (db === undefined) throw new UsageError('--index needs --db FILE');
  if (inputs.length === 0) throw new UsageError('--index needs at least one input (a .jsonl file, a folder, or - for stdin)');
  const file = resolve(db);
  try {
    const summary = await buildFtsIndex(file, readJsonl(inputs, process.stdin), table ?? 'docs');
    process.stderr.write(
      `indexed ${summary.documents} document(s) into ${file}${summary.skippedKeys.length > 0 ? `; metadata keys kept in no column: ${summary.skippedKeys.join(', ')}` : ''}\n`,
    );
    const filters = Object.fromEntries(Object.entries(summary.fields).map(([name, field]) => [name, field.array ? field : field.type]));
    const config = { kind: 'sqlite', path: file, ...(table ? { table } : {}), filters };
    process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof JsonlError) && (err as { code?: string }).code !== 'ENOENT') throw err;
    process.stderr.write(`rcp-gateway adapter: ${(err as Error).message}\n`);
    return 1;
  }
}

async function serveOverStdio(adapter: OpenedAdapter): Promise<number> {
  const shutdown = new AbortController();
  process.once('SIGTERM', () => shutdown.abort());
  process.once('SIGINT', () => shutdown.abort());
  await serveStdio(adapter.service, { input: process.stdin, output: process.stdout, shutdown: shutdown.signal, drainTimeoutMs: 5_000 });
  await adapter.close();
  return 0;
}

async function serveOverHttp(adapter: OpenedAdapter, portText: string, host: string | undefined): Promise<number> {
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError(`invalid --http port "${portText}"`);
  const settings = GatewaySchema.parse({ port, ...(host ? { host } : {}) });
  const logger = createLogger({ level: 'warn' });
  const server = await startHttpServer(adapter.service, settings, logger);
  process.stderr.write(`rcp-gateway adapter ${adapter.config.kind} listening on ${server.url}\n`);
  await new Promise<void>((done) => {
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
  });
  await server.close(settings.drainTimeoutMs);
  await adapter.close();
  return 0;
}
