/**
 * The console's SSE responses (src/node/console/sse.ts): the producer starts on the first read
 * of the body, never for a body nobody reads, and a watcher that stops reading is cut once
 * MAX_QUEUED_FRAMES wait for it, its subscription ended, instead of the queue growing.
 */
import { describe, expect, it } from 'vitest';
import { MAX_QUEUED_FRAMES, sseResponse, type SseChannel } from '../../src/node/console/sse.js';

function producer(): { started: () => boolean; closed: () => number; channel: () => SseChannel; start: (c: SseChannel) => () => void } {
  let channel: SseChannel | undefined;
  let closed = 0;
  return {
    started: () => channel !== undefined,
    closed: () => closed,
    channel: () => channel!,
    start: (c) => {
      channel = c;
      return () => {
        closed += 1;
      };
    },
  };
}

describe('console SSE responses', () => {
  it('starts nothing for a body that is never read', async () => {
    const p = producer();
    let onClose = 0;
    const response = sseResponse(p.start, () => (onClose += 1));
    await new Promise((resolve) => setImmediate(resolve));
    expect(p.started()).toBe(false);
    await response.body!.cancel();
    expect(onClose).toBe(1);
  });

  it('cuts a watcher that stops reading once the bound of frames waits for it, and unsubscribes once', async () => {
    const p = producer();
    let onClose = 0;
    const reader = sseResponse(p.start, () => (onClose += 1)).body!.getReader();
    const first = reader.read();
    await new Promise((resolve) => setImmediate(resolve));
    expect(p.started()).toBe(true);
    p.channel().send('state', { n: 0 });
    expect((await first).done).toBe(false);
    // The watcher reads no more: frames queue up to the bound, then the stream is cut.
    for (let n = 1; n <= MAX_QUEUED_FRAMES + 5; n++) p.channel().send('state', { n });
    expect(p.channel().closed).toBe(true);
    expect(p.closed()).toBe(1);
    expect(onClose).toBe(1);
    await expect(reader.read()).rejects.toThrow(/stopped reading/);
  });

  it('delivers every frame to a watcher that keeps reading', async () => {
    const p = producer();
    const reader = sseResponse(p.start).body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const pending = reader.read();
    await new Promise((resolve) => setImmediate(resolve));
    p.channel().send('state', { n: 0 });
    text += decoder.decode((await pending).value);
    for (let n = 1; n < MAX_QUEUED_FRAMES * 3; n++) {
      p.channel().send('state', { n });
      text += decoder.decode((await reader.read()).value);
    }
    p.channel().end();
    expect((await reader.read()).done).toBe(true);
    expect(text.match(/^event: state$/gm)).toHaveLength(MAX_QUEUED_FRAMES * 3);
    expect(p.closed()).toBe(1);
  });
});
