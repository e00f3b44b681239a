/**
 * Cancellation behaves as the AbortSignal it stands in for, in every way the gateway relies on:
 * one abort, its reason kept, listeners run once in order, removed ones never, late ones never,
 * a throwing listener does not starve the rest.
 */
import { describe, expect, it } from 'vitest';
import { Cancellation, type AbortLike } from '../../src/core/service/cancellation.js';
import { abortReasonOf } from '../../src/core/service/contract.js';

describe('Cancellation', () => {
  it('is not aborted until aborted, then keeps the first reason', () => {
    const cancellation = new Cancellation();
    expect(cancellation.signal.aborted).toBe(false);
    expect(cancellation.signal.reason).toBeUndefined();
    expect(() => cancellation.signal.throwIfAborted()).not.toThrow();
    cancellation.abort('deadline');
    cancellation.abort('cancel');
    expect(cancellation.signal.aborted).toBe(true);
    expect(cancellation.signal.reason).toBe('deadline');
    expect(abortReasonOf(cancellation.signal)).toBe('deadline');
    expect(() => cancellation.signal.throwIfAborted()).toThrow('deadline');
  });

  it('runs each listener once, in the order added; a removed one never', () => {
    const cancellation = new Cancellation();
    const heard: string[] = [];
    const first = (): void => void heard.push('first');
    const removed = (): void => void heard.push('removed');
    const last = (): void => void heard.push(`last:${String(cancellation.signal.reason)}`);
    cancellation.signal.addEventListener('abort', first, { once: true });
    cancellation.signal.addEventListener('abort', removed, { once: true });
    cancellation.signal.addEventListener('abort', last);
    cancellation.signal.addEventListener('abort', first); // the same listener again: still once
    cancellation.signal.removeEventListener('abort', removed);
    cancellation.abort('cancel');
    cancellation.abort('cancel');
    expect(heard).toEqual(['first', 'last:cancel']);
  });

  it('never runs a listener added after the abort (callers check `aborted` first)', () => {
    const cancellation = new Cancellation();
    cancellation.abort('shutdown');
    let heard = 0;
    cancellation.signal.addEventListener('abort', () => heard++);
    cancellation.abort('shutdown');
    expect(heard).toBe(0);
  });

  it('a throwing listener does not stop the others; its error surfaces asynchronously', async () => {
    const cancellation = new Cancellation();
    const heard: string[] = [];
    cancellation.signal.addEventListener('abort', () => {
      throw new Error('listener fault');
    });
    cancellation.signal.addEventListener('abort', () => void heard.push('after'));
    const reported = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    cancellation.abort('disconnect');
    expect(heard).toEqual(['after']);
    expect(await reported).toMatchObject({ message: 'listener fault' });
  });

  it('an AbortSignal is an AbortLike (code written against AbortLike takes either)', () => {
    const controller = new AbortController();
    const signal: AbortLike = controller.signal;
    controller.abort('cancel');
    expect(abortReasonOf(signal)).toBe('cancel');
  });
});
