/**
 * A Server-Sent Events response for the console's live endpoints: `send` writes one event,
 * `onClose` runs once when the client goes away or the producer ends the stream, so timers and
 * subscriptions never outlive their watcher.
 *
 * Two bounds keep a watcher from costing the gateway more than a few frames:
 * - the producer starts on the first read of the body, not when the response is built: a response
 *   whose body is never read (a HEAD answered by a GET route, a handler's answer dropped) never
 *   subscribes to anything;
 * - a watcher that stops reading (its socket full) is cut once MAX_QUEUED_FRAMES wait for it:
 *   the queue is dropped with the stream, never grown frame after frame.
 */
export interface SseChannel {
  send(event: string, data: unknown): void;
  end(): void;
  readonly closed: boolean;
}

/** Frames waiting for a watcher that does not read before it is cut. */
export const MAX_QUEUED_FRAMES = 16;

const encoder = new TextEncoder();

/** `onClose` runs once when the stream ends, whether or not its producer ever started. */
export function sseResponse(start: (channel: SseChannel) => () => void, onClose?: () => void): Response {
  let cleanup: (() => void) | undefined;
  let started = false;
  let closed = false;
  const finish = (): void => {
    if (closed) return;
    closed = true;
    cleanup?.();
    onClose?.();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (started) return;
        started = true;
        const channel: SseChannel = {
          send(event, data) {
            if (closed) return;
            // desiredSize is 0 minus the frames queued (high-water mark 0): past the bound, cut.
            if ((controller.desiredSize ?? 0) <= -MAX_QUEUED_FRAMES) {
              finish();
              controller.error(new Error('the watcher stopped reading'));
              return;
            }
            controller.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
          },
          end() {
            if (closed) return;
            finish();
            controller.close();
          },
          get closed() {
            return closed;
          },
        };
        cleanup = start(channel);
        if (closed) cleanup();
      },
      cancel() {
        finish();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { headers: SSE_HEADERS });
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};
