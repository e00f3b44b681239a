/** Value shapes the config schemas share. */
import { z } from 'zod';

export const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}, 'expected an http(s) URL');

export const positiveInt = z.int().min(1);
export const nonNegativeInt = z.int().min(0);

/**
 * The longest delay a timer takes: setTimeout (Node, browsers, Deno, workerd) keeps delays as a
 * signed 32-bit count of ms and fires a longer one after 1 ms, so a timeout or hedge delay past it
 * would fire at once instead of almost never.
 */
const MAX_TIMER_MS = 2_147_483_647;
const timerMessage = `expected at most ${MAX_TIMER_MS} ms (about 24.8 days): timers fire at once past it`;
/** A duration in ms that a timer waits: 1 ms to MAX_TIMER_MS. */
export const durationMs = positiveInt.max(MAX_TIMER_MS, timerMessage);
/** The same, 0 allowed. */
export const nonNegativeDurationMs = nonNegativeInt.max(MAX_TIMER_MS, timerMessage);
