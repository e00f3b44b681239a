/**
 * The Node runtime's `TransportFactory`: an undici pool for an `http` engine (one per replica,
 * behind a `ReplicaTransport`, when it lists `urls`), a child process speaking NDJSON for a
 * `stdio` one, a database adapter in this process for an `adapter` one. The composition root
 * (cli, operations) hands it to the gateway; the core never imports a transport.
 */
import type { TransportFactory } from '../../core/upstream/transport.js';
import { ReplicaTransport, replicaOptions } from '../../core/upstream/replicas.js';
import { HttpTransport } from './http.js';
import { StdioTransport } from './stdio.js';
import { AdapterTransport } from '../../adapters/transport.js';
import { ByteBudget, DEFAULT_MAX_BUFFERED_UPSTREAM_BYTES } from './byte-budget.js';

/** Transports whose HTTP answers all draw on one gateway-wide byte budget (`gateway.maxBufferedUpstreamBytes`). */
export function nodeTransportsWithin(budget: ByteBudget): TransportFactory {
  return (config, limits, events) => {
    if (config.transport === 'adapter') return new AdapterTransport(config);
    if (config.transport === 'http') {
      const http = (url: string): HttpTransport =>
        new HttpTransport({ url, connections: limits.connections, headers: config.headers, budget });
      if (config.urls) return new ReplicaTransport(config.urls.map(http), replicaOptions(config, limits));
      return http(config.url!);
    }
    return new StdioTransport({
      command: config.command!,
      cwd: config.cwd,
      env: config.env,
      maxLineBytes: limits.maxResponseBytes,
      onStderr: (line) => events.onStderr(line),
      onLog: (frame) => events.onLog(frame),
      onExit: (code, signal) => events.onExit(code, signal),
    });
  };
}

export const nodeTransports: TransportFactory = nodeTransportsWithin(new ByteBudget(DEFAULT_MAX_BUFFERED_UPSTREAM_BYTES));
