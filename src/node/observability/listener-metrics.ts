/**
 * What the Node listener's connection guards report (server/listener-guard.ts), as metrics in the
 * gateway's registry: bodies being read before admission, stalled bodies, refused connections.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ListenerObserver } from '../server/listener-guard.js';

export function listenerMetrics(registry: Registry, prefix: string): ListenerObserver {
  let bodiesReading = 0;
  const reading: Gauge = new Gauge({
    name: `${prefix}http_bodies_reading`,
    help: 'HTTP request bodies being read (not yet admitted).',
    registers: [registry],
    collect: () => reading.set(bodiesReading),
  });
  const bodyTimeouts = new Counter({
    name: `${prefix}http_body_timeouts_total`,
    help: 'HTTP requests whose body stalled past gateway.bodyTimeoutMs (answered 408).',
    registers: [registry],
  });
  const connectionsRefused = new Counter({
    name: `${prefix}http_connections_refused_total`,
    help: 'HTTP connections closed at once: their address had gateway.maxConnectionsPerIp open.',
    registers: [registry],
  });
  return {
    bodyReadStarted: () => void bodiesReading++,
    bodyReadEnded: () => void bodiesReading--,
    bodyTimedOut: () => bodyTimeouts.inc(),
    connectionRefused: () => connectionsRefused.inc(),
  };
}
