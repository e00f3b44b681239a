/**
 * Structured logs (pino) — always to stderr, so stdout stays protocol-only in stdio mode (§5.1).
 * JSON lines by default; human-readable (pino-pretty) when stderr is a terminal. Secrets and
 * Authorization headers are redacted wherever they could appear in a logged object.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export type LogFormat = 'json' | 'pretty';

export interface LogOptions {
  level: string;
  /** Default: `pretty` when stderr is a TTY, else `json`; `RCPGW_LOG_FORMAT=json|pretty` overrides. */
  format?: LogFormat;
}

/** Header names are matched in both spellings a config or a transport may use. */
const SECRET_HEADERS = [
  'authorization',
  'Authorization',
  'cookie',
  'Cookie',
  '["proxy-authorization"]',
  '["Proxy-Authorization"]',
  '["x-api-key"]',
];

const REDACT_PATHS = [
  ...SECRET_HEADERS.flatMap((h) => {
    const member = h.startsWith('[') ? h : `.${h}`;
    return [`headers${member}`, `*.headers${member}`, `engines[*].headers${member}`, `config.engines[*].headers${member}`];
  }),
  'config.gateway.cursorSecret',
  'gateway.cursorSecret',
  'cursorSecret',
  'env',
  '*.env',
  'engines[*].env',
  'config.engines[*].env',
];

let lastMs = Number.NaN;
let lastTime = '';
let secondStart = Number.NaN;
/** `,"time":"2026-12-02T07:40:00.` for the second being logged in. */
let secondPrefix = '';
const MILLIS = Array.from({ length: 1000 }, (_, ms) => String(ms).padStart(3, '0'));

/**
 * pino's `stdTimeFunctions.isoTime` (`,"time":"2026-12-02T07:40:00.123Z"`), the same text made
 * once per millisecond from a prefix made once per second: a Date and its ISO string per line
 * were a measurable part of the request line's cost, and at a few thousand lines a second most
 * share their second but not their millisecond.
 */
export function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    const second = Math.floor(now / 1000) * 1000;
    if (second !== secondStart) {
      secondStart = second;
      // Everything up to the milliseconds: the ISO string less its `123Z`, whatever its year's width.
      secondPrefix = `,"time":"${new Date(second).toISOString().slice(0, -4)}`;
    }
    lastTime = `${secondPrefix}${MILLIS[now - second]!}Z"`;
  }
  return lastTime;
}

function logFormat(explicit?: LogFormat): LogFormat {
  const env = process.env.RCPGW_LOG_FORMAT;
  if (env === 'json' || env === 'pretty') return env;
  return explicit ?? (process.stderr.isTTY ? 'pretty' : 'json');
}

export function createLogger(options: LogOptions): Logger {
  const base = {
    level: options.level,
    base: { svc: 'rcp-gateway' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: isoTime,
  };
  if (logFormat(options.format) === 'pretty') {
    // pino-pretty runs in pino's transport worker; it still writes to stderr (fd 2).
    return pino(
      base,
      pino.transport({
        target: 'pino-pretty',
        options: {
          destination: 2,
          colorize: Boolean(process.stderr.isTTY) && process.env.NO_COLOR === undefined,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname,svc',
        },
      }),
    );
  }
  return pino(base, pino.destination({ fd: 2, sync: false }));
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
