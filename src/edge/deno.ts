/**
 * Deno entry: `deno run --allow-net --allow-env --allow-read dist-edge/deno.js --config FILE`.
 * Deno.serve hands the core's Hono app web Requests; a client that goes away aborts the
 * request's signal, which cancels its live legs. SIGTERM/SIGINT stop accepting, let running
 * requests finish (up to `gateway.drainTimeoutMs`), stop the engines and exit.
 */
import { ConfigError } from '../core/config/validate.js';
import { ConsoleLogger } from './console-logger.js';
import { EdgeGateway } from './edge-gateway.js';
import { announceListening, serverStart } from './server-entry.js';

interface DenoServer {
  finished: Promise<void>;
  shutdown(): Promise<void>;
}

/** The part of the Deno namespace used here (no Deno type package in a Node project). */
declare const Deno: {
  args: string[];
  env: { toObject(): Record<string, string> };
  readTextFile(path: string): Promise<string>;
  serve(
    options: { hostname: string; port: number; onListen(address: { hostname: string; port: number }): void },
    handler: (request: Request, info: { remoteAddr: { hostname: string } }) => Promise<Response>,
  ): DenoServer;
  addSignalListener(signal: 'SIGTERM' | 'SIGINT', handler: () => void): void;
  exit(code: number): never;
};

try {
  const { config, host, port } = await serverStart(Deno.args, Deno.env.toObject(), (path) => Deno.readTextFile(path));
  const logger = new ConsoleLogger(config.gateway.logLevel);
  const edge = new EdgeGateway({ config, logger });
  await edge.start();
  const server = Deno.serve(
    {
      hostname: host,
      port,
      onListen: (address) => announceListening(logger, address.hostname, address.port, config.gateway.basePath),
    },
    (request, info) => edge.fetch(request, info.remoteAddr.hostname),
  );
  const stop = (): void => {
    const drained = Promise.race([server.shutdown(), new Promise((resolve) => setTimeout(resolve, config.gateway.drainTimeoutMs))]);
    void drained.then(() => edge.stop()).finally(() => Deno.exit(0));
  };
  Deno.addSignalListener('SIGTERM', stop);
  Deno.addSignalListener('SIGINT', stop);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  Deno.exit(2);
}
