/**
 * Inbound stdio transport (§5.1): NDJSON on stdin/stdout. Moves bytes only; the Session does
 * the protocol. stdout carries protocol frames and nothing else.
 */
import type { Readable, Writable } from 'node:stream';
import { parseErrorResponse } from '../protocol/jsonrpc.js';
import { LineSplitter, frameLine } from './ndjson.js';
import { Session, type SessionOptions } from './session.js';
import type { RcpService } from './service.js';

export interface StdioServerOptions {
  input: Readable;
  output: Writable;
  session?: Partial<SessionOptions>;
}

/** Serve one stdio connection; resolves when input ends (or after shutdown) and every answer is flushed. */
export function serveStdio(service: RcpService, options: StdioServerOptions): Promise<void> {
  const { input, output } = options;
  const session = new Session(service, { transport: 'stdio', stateless: false, ...options.session });
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
      // §5.1: EOF = shutdown: finish in-flight requests and flush their responses, then stop.
      void Promise.allSettled([...pending]).then(() => resolve());
    };

    const splitter = new LineSplitter((line) => {
      if (closed) return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        write(parseErrorResponse('line is not valid JSON'));
        return;
      }
      const task = session.handle({ value, sink: write }).then((answer) => {
        if (answer !== null) write(answer);
        if (session.isShutdown) finish();
      });
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
  });
}
