#!/usr/bin/env node
/**
 * The `rcp-gateway` command: serve (HTTP, with MCP at /mcp), stdio, mcp-stdio, check-config, engines.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfigFile, type LoadedConfig } from '../node/config/load.js';
import { createLogger, type Logger } from '../node/observability/log.js';
import { Gateway } from '../core/gateway/gateway.js';
import { AdmissionGate, InFlightRegistry } from '../core/session/admission.js';
import type { McpFacade } from '../mcp/facade.js';
import { startHttpServer } from '../node/server/listen.js';
import { serveStdio } from '../node/server/stdio.js';
import { Operations } from '../node/operations.js';
import { ByteBudget } from '../node/upstream/byte-budget.js';
import { nodeTransportsWithin } from '../node/upstream/factory.js';
import { PACKAGE_VERSION } from '../node/version.js';
import { useCursorDigests } from '../core/federation/cursor.js';
import { nodeCursorDigests } from '../node/crypto/cursor-digests.js';
import { nodeAuth } from '../node/auth/wiring.js';
import { unsafeBindReason } from '../core/auth/bind-policy.js';
import { announceListening, isGatewayWorker, parseWorkers, runPrimary, workerCursorSecret, workerPort } from '../node/server/cluster.js';

const DEFAULT_CONFIG = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../config/default.json');

const HELP: Record<string, string> = {
  main: `rcp-gateway — a federated gateway for the Retrieval Context Protocol (RCP/1)

Usage:
  rcp-gateway serve [--config FILE] [--host H] [--port N] [--workers N|auto]   serve HTTP at http://H:N/rcp
  rcp-gateway stdio [--config FILE]                         serve RCP over stdin/stdout
  rcp-gateway mcp-stdio [--config FILE]                     serve the gateway as an MCP server over stdin/stdout
  rcp-gateway check-config [--config FILE]                  validate a config and probe its engines
  rcp-gateway engines [--url URL]                           show live engine state of a running gateway
  rcp-gateway adapter <postgres|sqlite> …                   serve a database as an RCP engine (--help)
  rcp-gateway eval [--config FILE | --url URL] [--tune]     evaluate retrieval arms on judged queries

Run 'rcp-gateway <command> --help' for a command's options.
`,
  serve: `rcp-gateway serve [--config FILE] [--host H] [--port N] [--workers N|auto]

Serves RCP over HTTP at http://H:N<basePath> (default http://127.0.0.1:8787/rcp), and the same
federation as an MCP server (Streamable HTTP) at http://H:N/mcp.
  --config FILE  gateway config (default: the bundled config/default.json)
  --host H       listen address (default: gateway.host, 127.0.0.1)
  --port N       listen port (default: $PORT, then gateway.port, 8787; 0 = any free port)
  --workers N    worker processes sharing the port (default 1; auto = one per core). Each
                 worker is a full gateway: stdio engines are started once per worker.
  --allow-unauthenticated  serve on a non-loopback address with gateway.auth off (only behind
                 an authenticating proxy; same as gateway.auth.allowUnauthenticated)
`,
  stdio: `rcp-gateway stdio [--config FILE]

Serves RCP over stdin/stdout (NDJSON, spec §5.1). stdout carries protocol frames only;
diagnostics go to stderr.
  --config FILE  gateway config (default: the bundled config/default.json)
`,
  'mcp-stdio': `rcp-gateway mcp-stdio [--config FILE]

Serves the federation as an MCP server over stdin/stdout (tools search, list_engines, and rerank
when an engine offers it; the engine catalog as resources). stdout carries MCP frames only;
diagnostics go to stderr.
  --config FILE  gateway config (default: the bundled config/default.json)
`,
};

function fail(message: string, code = 1): never {
  process.stderr.write(`rcp-gateway: ${message}\n`);
  process.exit(code);
}

function loadOrExit(file: string | undefined): LoadedConfig {
  try {
    return loadConfigFile(file ?? DEFAULT_CONFIG);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, 2);
    throw err;
  }
}

async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      help: { type: 'boolean' },
      workers: { type: 'string' },
      'allow-unauthenticated': { type: 'boolean' },
    },
  });
  if (values.help) return void process.stdout.write(HELP.serve!);
  const loaded = loadOrExit(values.config);
  const settings = loaded.config.gateway;
  const portText = values.port ?? process.env.PORT;
  if (portText !== undefined) {
    const port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) fail(`invalid port "${portText}"`, 2);
    settings.port = port;
  }
  if (values.host) settings.host = values.host;
  if (values['allow-unauthenticated']) settings.auth.allowUnauthenticated = true;
  const unsafeBind = unsafeBindReason(settings.host, settings.auth);
  if (unsafeBind) fail(unsafeBind, 2);
  const workers = parseWorkers(values.workers);
  if (workers === undefined) fail(`invalid --workers "${values.workers}" (a positive integer or auto)`, 2);
  settings.port = workerPort() ?? settings.port; // a worker listens where its primary said
  // Workers sign pagination cursors with one shared key unless the config names its own.
  const sharedSecret = settings.cursorSecret === undefined ? workerCursorSecret() : undefined;
  if (sharedSecret) settings.cursorSecret = sharedSecret;
  const logger = createLogger({ level: settings.logLevel });
  if (workers > 1 && !isGatewayWorker()) {
    if (settings.httpSessions)
      logger.warn(
        'gateway.httpSessions is worker-local: a cancel posted on another connection may reach another worker; use --workers 1 when clients rely on it',
      );
    return runPrimary({
      workers,
      host: settings.host,
      port: settings.port,
      logger,
      stopTimeoutMs: settings.drainDelayMs + settings.drainTimeoutMs + 20_000,
    });
  }
  // The MCP SDK is loaded only by the commands that serve MCP.
  const { mcpFacade, mcpBesideRcp } = await import('../mcp/wiring.js');
  const mcp = mcpFacade(settings.name, PACKAGE_VERSION, logger);
  const { ops, gateway } = await startGatewayOrExit(loaded, logger, mcp);
  const beside = mcpBesideRcp(mcp, ops.attach(gateway), ops, settings, logger);
  const auth = await nodeAuth(settings, logger, () => gateway.settings.logQueries);
  const server = await startHttpServer(
    auth.runtime.wrap(beside.rcpService),
    settings,
    logger,
    auth.httpOptions(ops.httpOptions()),
    beside.mount,
    ops.metrics.listener,
  );
  // A reload keeps the listener's command-line host/port (they are restart-only anyway).
  await ops.startSidecars(loaded.file, (next) =>
    Object.assign(next.gateway, {
      host: settings.host,
      port: settings.port,
      ...(sharedSecret && next.gateway.cursorSecret === undefined ? { cursorSecret: sharedSecret } : {}),
    }),
  );
  announceListening(server.url);

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, drainDelayMs: settings.drainDelayMs }, 'shutting down');
    // /readyz answers 503 from here on; the listener keeps serving for drainDelayMs (lame duck)
    // so load balancers watching /readyz take this replica out before it stops accepting.
    ops.markDraining();
    // Last resort should an engine refuse to stop: the drain and engine stop are bounded anyway.
    setTimeout(() => process.exit(0), settings.drainDelayMs + settings.drainTimeoutMs + 15_000).unref();
    const lameDuck =
      settings.drainDelayMs > 0 ? new Promise<void>((resolve) => setTimeout(resolve, settings.drainDelayMs)) : Promise.resolve();
    void lameDuck
      .then(() => Promise.all([beside.close(settings.drainTimeoutMs), server.close(settings.drainTimeoutMs)]))
      .then(() => gateway.stop())
      .then(() => ops.close())
      .then(() => auth.close())
      .then(() => {
        logger.flush?.();
        process.exit(0);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/**
 * Start the engines; a `required` engine that cannot start ends the process with code 1. With an
 * MCP facade, its catalog watch hears of engine status, breaker and reload changes.
 */
async function startGatewayOrExit(loaded: LoadedConfig, logger: Logger, mcp?: McpFacade): Promise<{ ops: Operations; gateway: Gateway }> {
  const ops = new Operations(loaded.config, logger);
  const gateway = new Gateway(loaded.config, {
    logger,
    hooks: mcp ? mcp.hooks(ops.hooks) : ops.hooks,
    transports: nodeTransportsWithin(new ByteBudget(loaded.config.gateway.maxBufferedUpstreamBytes)),
    version: PACKAGE_VERSION,
  });
  try {
    await gateway.start();
  } catch (err) {
    await gateway.stop();
    fail((err as Error).message, 1);
  }
  if (mcp) {
    await mcp.start(gateway);
    ops.onReload(() => mcp.catalogChanged());
  }
  return { ops, gateway };
}

async function mcpStdio(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string' }, help: { type: 'boolean' } } });
  if (values.help) return void process.stdout.write(HELP['mcp-stdio']!);
  const loaded = loadOrExit(values.config);
  const settings = loaded.config.gateway;
  const logger = createLogger({ level: settings.logLevel });
  const [{ mcpFacade }, { serveMcpStdio }] = await Promise.all([import('../mcp/wiring.js'), import('../mcp/stdio.js')]);
  const mcp = mcpFacade(settings.name, PACKAGE_VERSION, logger);
  const { ops, gateway } = await startGatewayOrExit(loaded, logger, mcp);
  const service = ops.attach(gateway);
  await ops.startSidecars(loaded.file);
  const gate = new AdmissionGate(settings.maxInFlight);
  // What shutdown answers -32010 past the drain timeout, as on the HTTP listener (§13.1).
  const registry = new InFlightRegistry();
  const connection = serveMcpStdio(mcp, {
    service,
    maxLineBytes: settings.maxBodyBytes,
    session: { ...ops.sessionOptions(), admit: () => gate.tryEnter(), registry },
    onError: (err) => logger.debug({ err: err instanceof Error ? err.message : String(err) }, 'mcp'),
  });
  let stopping: Promise<void> | undefined;
  // SIGTERM/SIGINT or stdin EOF: let tool calls finish, end listen streams cleanly, stop (exit 0).
  const stop = (trigger: string): Promise<void> =>
    (stopping ??= (async () => {
      logger.info({ trigger }, 'shutting down');
      await connection.close(settings.drainTimeoutMs, () => registry.failAll());
      mcp.close();
      await gateway.stop();
      await ops.close();
      logger.flush?.();
      process.stdout.write('', () => process.exit(0));
    })());
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  await connection.ended;
  await stop('stdin closed');
}

async function stdio(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string' }, help: { type: 'boolean' } } });
  if (values.help) return void process.stdout.write(HELP.stdio!);
  const loaded = loadOrExit(values.config);
  const logger = createLogger({ level: loaded.config.gateway.logLevel });
  const { ops, gateway } = await startGatewayOrExit(loaded, logger);
  const auth = await nodeAuth(loaded.config.gateway, logger, () => gateway.settings.logQueries);
  const service = auth.runtime.wrap(ops.attach(gateway));
  await ops.startSidecars(loaded.file);
  const stop = async (): Promise<void> => {
    await gateway.stop();
    await ops.close();
    await auth.close();
    process.stdout.write('', () => process.exit(0));
  };
  // SIGTERM/SIGINT: stop reading, drain in-flight requests, answer the rest -32010, then stop (exit 0).
  const shutdown = new AbortController();
  process.on('SIGTERM', () => shutdown.abort());
  process.on('SIGINT', () => shutdown.abort());
  const settings = loaded.config.gateway;
  await serveStdio(service, {
    input: process.stdin,
    output: process.stdout,
    session: auth.sessionOptions(ops.sessionOptions(), 'stdio'),
    maxInFlight: settings.maxInFlight,
    maxBodyBytes: settings.maxBodyBytes,
    maxBatchSize: settings.maxBatchSize,
    onRefused: (detail) => logger.warn({ detail }, 'stdio request refused: payload too large'),
    shutdown: shutdown.signal,
    drainTimeoutMs: settings.drainTimeoutMs,
  });
  await stop();
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  useCursorDigests(nodeCursorDigests); // same cursors as the portable code, for less CPU
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'stdio':
      return stdio(rest);
    case 'mcp-stdio':
      return mcpStdio(rest);
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(HELP.main!);
      return;
    default: {
      const extra = await import('./commands.js');
      if (await extra.run(command, rest)) return;
      process.stderr.write(HELP.main!);
      fail(`unknown command "${command}"`, 2);
    }
  }
}

main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err)));
