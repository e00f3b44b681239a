/**
 * Inbound stdio transport (§5.1): NDJSON on stdin/stdout. Moves bytes only; the Session does
 * the protocol. stdout carries protocol frames and nothing else.
 */
import type { Readable, Writable } from 'node:stream';
import { errorResponse, parseErrorResponse } from '../../core/protocol/jsonrpc.js';
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
  /** The same body cap as HTTP: a longer line is answered -32013 (id null) and logged, never dropped silently. */
  maxBodyBytes?: number;
  /** Most members in one batch (§11); a larger batch is answered -32013 as a whole. */
  maxBatchSize?: number;
  /** Where refused lines are reported (stderr: stdout carries protocol frames only). */
  onRefused?: (reason: string) => void;
}

/** Default line cap without a configured body cap: bounded memory for one line. */
const DEFAULT_MAX_LINE = 64 * 1024 * 1024;

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

    const refuse = refusal(options, write);
    const splitter = new LineSplitter(
      (line) => {
        if (closed) return;
        const task = answerLine(session, line, write, options.maxBatchSize, refuse)?.then(() => {
          if (session.isShutdown) finish();
        });
        if (!task) return;
        pending.add(task);
        void task.finally(() => pending.delete(task));
      },
      options.maxBodyBytes ?? DEFAULT_MAX_LINE,
      () => refuse(`line exceeds ${options.maxBodyBytes ?? DEFAULT_MAX_LINE} characters`),
    );

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

/** How a line over a cap is refused: reported (logged), and answered -32013 with id null (§4.7: its id is unknown, the line was never read). */
function refusal(options: StdioServerOptions, write: (message: unknown) => void): (detail: string) => void {
  return (detail) => {
    options.onRefused?.(detail);
    write(errorResponse(null, { code: ErrorCode.PayloadTooLarge, message: 'payload too large', data: { detail } }));
  };
}

/** One NDJSON line through the session; a line that is not JSON (or too large a batch) is answered at once (undefined). */
function answerLine(
  session: Session,
  line: string,
  write: (message: unknown) => void,
  maxBatchSize: number | undefined,
  refuse: (detail: string) => void,
): Promise<void> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    write(parseErrorResponse('line is not valid JSON'));
    return undefined;
  }
  if (maxBatchSize !== undefined && Array.isArray(value) && value.length > maxBatchSize) {
    refuse(`batch too large: ${value.length} members, at most ${maxBatchSize} accepted`);
    return undefined;
  }
  return session.handle({ value, sink: write }).then((answer) => {
    if (answer !== null) write(answer);
  });
}
