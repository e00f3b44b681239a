/**
 * The HTTP session registry (src/server/http-sessions.ts) on its own: tokens, cancel routing by
 * id, and the bounds that keep it from growing (idle TTL, session cap, per-session id cap).
 * Pure code with an injected clock; the end-to-end behaviour is in disconnect.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { HttpSessionRegistry, cancelIdsOf, requestIdsOf } from '../../src/core/session/http-sessions.js';
import type { Session } from '../../src/core/session/session.js';

/** Stands in for the per-request Session: records which ids it was asked to cancel. */
function recorder(): Session & { cancelled: Array<string | number> } {
  const cancelled: Array<string | number> = [];
  return { cancelled, cancel: (id: string | number) => (cancelled.push(id), true) } as unknown as Session & {
    cancelled: Array<string | number>;
  };
}

function registry(settings: Partial<{ ttlMs: number; maxSessions: number; maxInFlightPerSession: number }> = {}) {
  const clock = { now: 0 };
  const sessions = new HttpSessionRegistry({ ttlMs: 1_000, maxSessions: 100, maxInFlightPerSession: 10, ...settings }, () => clock.now);
  return { sessions, clock };
}

describe('HttpSessionRegistry', () => {
  it('issues distinct unguessable tokens and routes a cancel to the request holding the id', () => {
    const { sessions } = registry();
    const a = sessions.open();
    const b = sessions.open();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const session = recorder();
    const tracked = sessions.track(a, ['q1', 2], session);
    expect(tracked.duplicates).toEqual([]);
    expect(sessions.cancel(b, 'q1')).toBe(false); // another session's id
    expect(sessions.cancel('nope', 'q1')).toBe(false);
    expect(sessions.cancel(a, 'q1')).toBe(true);
    expect(sessions.cancel(a, 2)).toBe(true);
    expect(sessions.cancel(a, '2')).toBe(false); // ids keep their JSON type
    expect(session.cancelled).toEqual(['q1', 2]);
    tracked.release();
    expect(sessions.cancel(a, 'q1')).toBe(false); // finished ids are ignored
  });

  it('reports ids already in flight in the same session', () => {
    const { sessions } = registry();
    const token = sessions.open();
    sessions.track(token, ['x'], recorder());
    expect(sessions.track(token, ['x', 'y'], recorder()).duplicates).toEqual(['x']);
  });

  it('forgets idle sessions after the TTL, but never one with a request in flight', () => {
    const { sessions, clock } = registry({ ttlMs: 1_000 });
    const idle = sessions.open();
    const busy = sessions.open();
    const tracked = sessions.track(busy, ['long'], recorder());
    clock.now = 5_000;
    expect(sessions.has(idle)).toBe(false);
    expect(sessions.cancel(busy, 'long')).toBe(true);
    tracked.release(); // idle from now on
    clock.now = 5_500;
    expect(sessions.has(busy)).toBe(true);
    clock.now = 7_000;
    expect(sessions.has(busy)).toBe(false);
    expect(sessions.size).toBe(0);
  });

  it('caps the number of sessions, forgetting the least recently used first', () => {
    const { sessions, clock } = registry({ maxSessions: 3, ttlMs: 1_000_000 });
    const first = sessions.open();
    clock.now = 1;
    const second = sessions.open();
    clock.now = 2;
    const third = sessions.open();
    clock.now = 3;
    expect(sessions.has(first)).toBe(true); // touched: now the most recent
    const fourth = sessions.open();
    expect(sessions.size).toBe(3);
    expect(sessions.has(second)).toBe(false);
    for (const token of [first, third, fourth]) expect(sessions.has(token)).toBe(true);
  });

  it('tracks at most maxInFlightPerSession ids per session', () => {
    const { sessions } = registry({ maxInFlightPerSession: 2 });
    const token = sessions.open();
    sessions.track(token, [1, 2, 3], recorder());
    expect(sessions.cancel(token, 1)).toBe(true);
    expect(sessions.cancel(token, 2)).toBe(true);
    expect(sessions.cancel(token, 3)).toBe(false); // served, just not cancellable by id
  });

  it('reads request ids and cancel targets from single messages and batches', () => {
    const cancel = (id: unknown) => ({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id } });
    const request = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'retrieve', params: {} });
    expect(requestIdsOf(request('a'))).toEqual(['a']);
    expect(requestIdsOf([request(1), cancel(2), { nonsense: true }])).toEqual([1]);
    expect(cancelIdsOf(cancel('a'))).toEqual(['a']);
    expect(
      cancelIdsOf([cancel(1), cancel(null), request(3), { jsonrpc: '2.0', method: 'notifications/other', params: { id: 4 } }]),
    ).toEqual([1]);
  });
});
