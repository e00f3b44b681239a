/**
 * The core's logger at the edge: one JSON line per entry on the console, shaped like the Node
 * gateway's pino lines (`level` as pino's number, ISO `time`, `svc`, bound fields, `msg`), so one
 * log pipeline reads both. Workers Logs / Logpush, Deno Deploy and `bun` collect console output;
 * warnings and errors go through console.warn / console.error so the platform's own level
 * matches the line's.
 */
export type LogFields = Record<string, unknown>;
export type LevelName = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

const LEVELS: Record<LevelName, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

export interface ConsoleSink {
  debug(line: string): void;
  log(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

export class ConsoleLogger {
  private readonly threshold: number;

  constructor(
    level: LevelName,
    private readonly bindings: LogFields = { svc: 'rcp-gateway' },
    private readonly sink: ConsoleSink = console,
  ) {
    this.threshold = LEVELS[level];
  }

  debug(fields: LogFields, message?: string): void {
    this.write(LEVELS.debug, fields, message);
  }

  info(fields: LogFields, message?: string): void {
    this.write(LEVELS.info, fields, message);
  }

  warn(fields: LogFields, message?: string): void {
    this.write(LEVELS.warn, fields, message);
  }

  error(fields: LogFields, message?: string): void {
    this.write(LEVELS.error, fields, message);
  }

  isLevelEnabled(level: LevelName): boolean {
    return LEVELS[level] >= this.threshold;
  }

  child(bindings: LogFields): ConsoleLogger {
    const level = (Object.keys(LEVELS) as LevelName[]).find((name) => LEVELS[name] === this.threshold) ?? 'info';
    return new ConsoleLogger(level, { ...this.bindings, ...bindings }, this.sink);
  }

  private write(level: number, fields: LogFields, message: string | undefined): void {
    if (level < this.threshold) return;
    const line = JSON.stringify(
      { level, time: new Date().toISOString(), ...this.bindings, ...fields, ...(message !== undefined ? { msg: message } : {}) },
      errorsAsText,
    );
    if (level >= LEVELS.error) this.sink.error(line);
    else if (level >= LEVELS.warn) this.sink.warn(line);
    else if (level >= LEVELS.info) this.sink.log(line);
    else this.sink.debug(line);
  }
}

/** Errors would serialize as `{}`; a log line wants their message. */
function errorsAsText(_key: string, value: unknown): unknown {
  return value instanceof Error ? { type: value.name, message: value.message } : value;
}
