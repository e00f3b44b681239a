/**
 * The logging the core needs, as an interface: structured fields first, then the message; a
 * child logger carries bound fields (e.g. `{ engine }`). The Node runtime passes a pino logger,
 * which satisfies this structurally; other runtimes can pass anything with the same shape.
 */
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(fields: LogFields, message?: string): void;
  info(fields: LogFields, message?: string): void;
  warn(fields: LogFields, message?: string): void;
  error(fields: LogFields, message?: string): void;
  child(bindings: LogFields): Logger;
}
