/**
 * A Server-Sent Events response for the console's live endpoints: `send` writes one event,
 * `onClose` runs once when the client goes away or the producer ends the stream, so timers and
 * subscriptions never outlive their watcher.
 */
export interface SseChannel {
  send(event: string, data: unknown): void;
  end(): void;
  readonly closed: boolean;
}

const encoder = new TextEncoder();

export function sseResponse(start: (channel: SseChannel) => () => void): Response {
  let cleanup: (() => void) | undefined;
  let closed = false;
  const finish = (): void => {
    if (closed) return;
    closed = true;
    cleanup?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const channel: SseChannel = {
        send(event, data) {
          if (closed) return;
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
  });
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    },
  });
}
