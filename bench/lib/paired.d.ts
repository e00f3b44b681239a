/** Types of bench/lib/paired.js, for the tests that check it. */
export interface Paired {
  median: number;
  lower: number;
  higher: number;
  rounds: number;
  p: number;
}
export function median(xs: readonly number[]): number;
export function signTestP(lower: number, higher: number): number;
export function pairedRatio(variant: readonly number[], reference: readonly number[]): Paired;
export function describePaired(paired: Paired): string;
