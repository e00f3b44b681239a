/**
 * Bun entry: `bun dist-edge/bun.js --config FILE`. Bun.serve hands the core's Hono app web
 * Requests; a client that goes away aborts the request's signal, which cancels its live legs.
 * Bun closes a connection idle for 10 s by default, which would cut SSE answers between
 * heartbeats and plain answers waiting on slow engines: the idle timeout is switched off, the
 * gateway's deadlines bound every request. SIGTERM/SIGINT stop accepting, let running requests
 * finish (up to `gateway.drainTimeoutMs`), stop the engines and exit.
 */
import { ConfigError } from '../core/config/validate.js';
import { ConsoleLogger } from './console-logger.js';
import { EdgeGateway } from './edge-gateway.js';
import { announceListening, serverStart } from './server-entry.js';

/** The part of the Bun namespace used here (no Bun type package in a Node project). */
declare const Bun: {
  argv: string[];
  env: Record<string, string | undefined>;
  file(path: string): { text(): Promise<string> };
  serve(options: {
    hostname: string;
    port: number;
    idleTimeout: number;
    fetch(request: Request, server: { requestIP(request: Request): { address: string } | null }): Promise<Response>;
  }): {
    hostname: string;
    port: number;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
};

try {
  const { config, host, port } = await serverStart(Bun.argv.slice(2), Bun.env, (path) => Bun.file(path).text());
  const logger = new ConsoleLogger(config.gateway.logLevel);
  const edge = new EdgeGateway({ config, logger });
  await edge.start();
  const server = Bun.serve({
    hostname: host,
    port,
    idleTimeout: 0,
    fetch: (request, bun) => edge.fetch(request, bun.requestIP(request)?.address),
  });
  announceListening(logger, server.hostname, server.port, config.gateway.basePath);
  const stop = (): void => {
    const drained = Promise.race([server.stop(), new Promise((resolve) => setTimeout(resolve, config.gateway.drainTimeoutMs))]);
    void drained.then(() => edge.stop()).finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(2);
}
