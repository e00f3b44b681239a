/**
 * Bounds on MCP `subscriptions/listen` streams over HTTP. Each is an SSE response that lasts as
 * long as the client keeps it, and the SDK caps them process-wide (1024), refusing past that
 * with -32603 — so one client holding them all locked every other client out of change
 * notifications, with an "internal error". Here each client address may hold PER_CLIENT streams
 * and the process TOTAL (below the SDK's cap); past either, 429 or 503 with `Retry-After`.
 */
export const LISTEN_STREAMS_PER_CLIENT = 16;
export const LISTEN_STREAMS_TOTAL = 1000;

export class ListenStreams {
  private total = 0;
  private readonly perClient = new Map<string, number>();

  /** A refusal, or undefined once a stream for `client` is counted (its `release` given to `track`). */
  admit(client: string): { refused: Response } | { release: () => void } {
    const held = this.perClient.get(client) ?? 0;
    if (held >= LISTEN_STREAMS_PER_CLIENT) return { refused: busy(429, `at most ${LISTEN_STREAMS_PER_CLIENT} listen streams per client`) };
    if (this.total >= LISTEN_STREAMS_TOTAL) return { refused: busy(503, `at most ${LISTEN_STREAMS_TOTAL} listen streams at once`) };
    this.total += 1;
    this.perClient.set(client, held + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total -= 1;
        const left = (this.perClient.get(client) ?? 1) - 1;
        if (left === 0) this.perClient.delete(client);
        else this.perClient.set(client, left);
      },
    };
  }
}

/** The response with `onEnd` run once its body ends, fails or is cancelled (or at once without a body). */
export function whenBodyEnds(response: Response, onEnd: () => void): Response {
  if (!response.body) {
    onEnd();
    return response;
  }
  const reader = response.body.getReader();
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) {
            end();
            controller.close();
          } else controller.enqueue(value);
        } catch (err) {
          end();
          controller.error(err);
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

function busy(status: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }), {
    status,
    headers: { 'content-type': 'application/json', 'retry-after': '5' },
  });
}
