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

/**
 * The largest fusion weight (an engine's `weight`, a request's `weights`): weighted fusion sums
 * weight × score over the engines, and weights near the number range overflowed that sum to
 * Infinity, which JSON writes as a null score (not a number, §7.7). A million to one is past any
 * ratio worth weighting by.
 */
export const MAX_FUSION_WEIGHT = 1_000_000;
export const fusionWeight = z
  .number()
  .finite()
  .min(0, 'expected a weight ≥ 0')
  .max(MAX_FUSION_WEIGHT, `expected a weight ≤ ${MAX_FUSION_WEIGHT}`);
