/**
 * The part of a structured logger the core writes to: an object of fields, then a message.
 * pino's `Logger` satisfies it, so the composition root passes its own; the core never names
 * a logging library.
 */
export interface LogFn {
  (fields: object, message?: string): void;
}

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}
