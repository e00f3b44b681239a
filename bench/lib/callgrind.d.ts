/** Types of bench/lib/callgrind.js, for the tests that check it. */
export type Ranked = [name: string, perRequest: number][];
export interface EventSummary {
  origins: Ranked;
  functions: Ranked;
}
export interface CallgrindSummary extends EventSummary {
  /** Instructions per request. */
  total: number;
  /** Every event of the dump (`Ir`, and with the cache simulation `I1mr`, `D1mr`, …). */
  events: Map<string, EventSummary>;
}
export function originOf(name: string): string;
export function summarizeCallgrind(dump: string, perfMap: string, requests: number): CallgrindSummary;
