/**
 * Inbound stdio transport (§5.1): NDJSON on stdin/stdout. Moves bytes only; the Session does
 * the protocol. stdout carries protocol frames and nothing else.
 */
import type { Readable, Writable } from 'node:stream';
import { parseErrorResponse } from '../../core/protocol/jsonrpc.js';
import { LineSplitter, frameLine } from '../../core/protocol/ndjson.js';
import { Session, type SessionOptions } from '../../core/session/session.js';
import type { RcpService } from '../../core/service/contract.js';
import { AdmissionGate } from '../../core/session/admission.js';
import { ErrorCode } from '../../core/protocol/errors.js';

export interface StdioServerOptions {
  input: Readable;
  output: Writable;
  session?: Partial<SessionOptions>;
  /** Gateway-wide cap on requests in flight: beyond it a request is answered -32011 with `retryAfterMs`. */
  maxInFlight?: number;
  /**
   * Graceful shutdown (SIGTERM/SIGINT): when it aborts, stop reading, let in-flight requests
   * finish for `drainTimeoutMs`, then answer the rest -32010; resolves once all is flushed.
   */
  shutdown?: AbortSignal;
  drainTimeoutMs?: number;
}

/** Serve one stdio connection; resolves when input ends (or after shutdown) and every answer is flushed. */
export function serveStdio(service: RcpService, options: StdioServerOptions): Promise<void> {
  const { input, output } = options;
  const gate = options.maxInFlight !== undefined ? new AdmissionGate(options.maxInFlight) : undefined;
  const session = new Session(service, {
    transport: 'stdio',
    stateless: false,
    ...options.session,
    ...(gate ? { admit: () => gate.tryEnter() } : {}),
  });
  const pending = new Set<Promise<void>>();
  let closed = false;

  const write = (message: unknown): void => {
    if (!output.writable) return;
    output.write(frameLine(message));
  };

  return new Promise<void>((resolve) => {
    const finish = (): void => {
      if (closed) return;
      closed = true;
      input.off('data', onData);
      input.pause();
      // §5.1: EOF = shutdown: finish in-flight requests and flush their responses, then stop.
      void Promise.allSettled([...pending])
        .then(
          () =>
            new Promise<void>((flushed) => {
              if (output.writable) output.write('', () => flushed());
              else flushed();
            }),
        )
        .then(() => resolve());
    };

    const onShutdown = (): void => {
      finish();
      // After the drain timeout, whatever is still running is answered -32010 (exactly once, §13.1).
      const timer = setTimeout(() => session.failAll(ErrorCode.BackendUnavailable, 'server is shutting down'), options.drainTimeoutMs ?? 0);
      void Promise.allSettled([...pending]).then(() => clearTimeout(timer));
    };

    const splitter = new LineSplitter((line) => {
      if (closed) return;
      const task = answerLine(session, line, write)?.then(() => {
        if (session.isShutdown) finish();
      });
      if (!task) return;
      pending.add(task);
      void task.finally(() => pending.delete(task));
    });

    const onData = (chunk: Buffer | string): void => splitter.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
    input.setEncoding?.('utf8');
    input.on('data', onData);
    input.once('end', () => {
      splitter.end();
      finish();
    });
    input.once('error', finish);
    if (options.shutdown?.aborted) onShutdown();
    else options.shutdown?.addEventListener('abort', onShutdown, { once: true });
  });
}

/** One NDJSON line through the session; a line that is not JSON is answered -32700 at once (undefined). */
function answerLine(session: Session, line: string, write: (message: unknown) => void): Promise<void> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    write(parseErrorResponse('line is not valid JSON'));
    return undefined;
  }
  return session.handle({ value, sink: write }).then((answer) => {
    if (answer !== null) write(answer);
  });
}
