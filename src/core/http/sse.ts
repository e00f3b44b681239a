/**
 * §5.2 SSE answer: zero or more `notifications/progress` (and opted-in `notifications/log`)
 * frames, then exactly one final frame with the response, then the stream ends. Each frame is
 * one `data:` line of compact JSON and a blank line, enqueued (and so flushed by the runtime
 * adapter) as soon as it is produced. `: keep-alive` comments keep idle proxies from timing
 * the stream out. A client that goes away aborts the call; nothing is written after that.
 */
import type { NotificationMessage, ResponseMessage } from '../protocol/jsonrpc.js';
import type { Session } from '../session/session.js';

type Reply = ResponseMessage | ResponseMessage[] | null;

export interface SseLifecycle {
  /** Interval of `: keep-alive` comments. */
  heartbeatMs: number;
  /** Frees the admission slot (once, when the stream ends either way). */
  release: () => void;
  /** The request has been answered (or abandoned): stop tracking its id. */
  finished: () => void;
  decorate: (reply: Reply) => Reply;
  onOpen?: () => void;
  onClose?: () => void;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  // no-transform: intermediaries must not compress or otherwise rewrite the stream.
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no', // proxies (nginx) must not buffer the stream
} as const;

export function sseReply(session: Session, value: unknown, headers: Record<string, string>, lifecycle: SseLifecycle): Response {
  const frames = new FrameWriter(lifecycle);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      frames.open(controller);
      // §5.2: one `data:` line per frame, compact JSON, blank line terminator.
      const sink = (frame: NotificationMessage): void => frames.send(`data: ${JSON.stringify(frame)}\n\n`);
      void session.handle({ value, sink, headers }).then((answer) => {
        const reply = lifecycle.decorate(answer);
        if (reply !== null) frames.send(`data: ${JSON.stringify(reply)}\n\n`);
        frames.end();
        try {
          controller.close();
        } catch {
          // The client cancelled the stream first; closing it again throws.
        }
      });
    },
    cancel() {
      frames.end();
      session.abortAll('disconnect');
    },
  });
  return new Response(stream, { status: 200, headers: SSE_HEADERS });
}

/** Writes frames while the stream is open and ends it exactly once, whichever way it ends. */
class FrameWriter {
  private readonly encoder = new TextEncoder();
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private writable = true;
  private closed = false;

  constructor(private readonly lifecycle: SseLifecycle) {}

  open(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.controller = controller;
    this.lifecycle.onOpen?.();
    this.heartbeat = setInterval(() => this.send(': keep-alive\n\n'), this.lifecycle.heartbeatMs);
    this.heartbeat.unref?.();
  }

  send(text: string): void {
    if (!this.writable || !this.controller) return;
    try {
      this.controller.enqueue(this.encoder.encode(text));
    } catch {
      this.writable = false;
    }
  }

  /** Final frame written, or client gone. */
  end(): void {
    this.writable = false;
    clearInterval(this.heartbeat);
    if (this.closed) return;
    this.closed = true;
    this.lifecycle.finished();
    this.lifecycle.release();
    this.lifecycle.onClose?.();
  }
}
