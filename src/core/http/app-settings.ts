/**
 * The HTTP app options every runtime derives the same way from the gateway settings (body cap,
 * heartbeats, HTTP sessions, CORS, admission through the gateway-wide gate, batch cap), so the
 * Node listener and the edge entries cannot drift apart; each adds its own I/O and routes.
 */
import type { GatewaySettings } from '../config/schema.js';
import type { AdmissionGate } from '../session/admission.js';
import type { HttpServerOptions } from './app.js';

export type SharedHttpOptions = Pick<
  HttpServerOptions,
  'basePath' | 'maxBodyBytes' | 'sseHeartbeatMs' | 'streaming' | 'httpSessions' | 'corsOrigins' | 'admit' | 'maxBatchSize'
>;

export function httpAppSettings(settings: GatewaySettings, gate: AdmissionGate): SharedHttpOptions {
  return {
    basePath: settings.basePath,
    maxBodyBytes: settings.maxBodyBytes,
    sseHeartbeatMs: settings.sseHeartbeatMs,
    streaming: true,
    ...(settings.httpSessions
      ? {
          httpSessions: {
            ttlMs: settings.httpSessionTtlMs,
            maxSessions: settings.maxHttpSessions,
            maxInFlightPerSession: settings.maxInFlight,
          },
        }
      : {}),
    corsOrigins: settings.corsOrigins,
    admit: (weight) => gate.tryEnter(weight),
    // A batch larger than the in-flight cap could never be admitted: refused as too large instead.
    maxBatchSize: Math.min(settings.maxBatchSize, settings.maxInFlight),
  };
}
