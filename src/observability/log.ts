/**
 * Structured logs (pino) — always to stderr, so stdout stays protocol-only in stdio mode (§5.1).
 * Secrets and Authorization headers are redacted.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export interface LogOptions {
  level: string;
}

export const REDACT_PATHS = [
  'headers.authorization', 'headers.cookie', 'headers["proxy-authorization"]',
  '*.headers.authorization', 'config.gateway.cursorSecret', 'cursorSecret', '*.env',
];

export function createLogger(options: LogOptions): Logger {
  return pino(
    {
      level: options.level,
      base: { svc: 'rcp-gateway' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    pino.destination({ fd: 2, sync: false }),
  );
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
