/**
 * The best `k` of fusion's candidates in §16.3 order (merge.ts `compareEntries`), ties kept in
 * arrival order as a stable sort keeps them: by insertion for a page, a bounded heap for a larger
 * `k` that is a small share of the candidates, else one sort. Pure; split from fuse.ts, which
 * scores the candidates.
 */
import { compareEntries, type FusedEntry } from './merge.js';

/** Up to this `k` (a page), the best are kept by insertion (bestByInsertion) rather than a sort or a heap. */
const INSERTION_K = 32;

/**
 * The first `k` of `all` in §16.3 order, ties kept in arrival order exactly as the stable sort
 * would. For a page-sized k below n, insertion into the k best so far; for a larger k ≪ n, a
 * max-heap of the k best so far (root = the worst of them); either rejects most candidates with
 * one comparison instead of sorting all n.
 */
export function bestEntries<T extends Pick<FusedEntry, 'fused' | 'weightSum' | 'hit'>>(all: T[], k: number): T[] {
  const n = all.length;
  if (k <= 0) return [];
  if (k < n && k <= INSERTION_K && Number.isInteger(k)) return bestByInsertion(all, k);
  if (k * 4 >= n) return all.sort(compareEntries).slice(0, k);
  // Heap of indices into `all`; the index breaks exact ties as arrival order.
  const worse = (a: number, b: number): boolean => {
    const c = compareEntries(all[a]!, all[b]!);
    return c > 0 || (c === 0 && a > b);
  };
  const heap: number[] = [];
  const siftUp = (at: number): void => {
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!worse(heap[at]!, heap[parent]!)) return;
      [heap[at], heap[parent]] = [heap[parent]!, heap[at]!];
      at = parent;
    }
  };
  const siftDown = (at: number): void => {
    for (;;) {
      const left = at * 2 + 1;
      if (left >= heap.length) return;
      const right = left + 1;
      const child = right < heap.length && worse(heap[right]!, heap[left]!) ? right : left;
      if (!worse(heap[child]!, heap[at]!)) return;
      [heap[at], heap[child]] = [heap[child]!, heap[at]!];
      at = child;
    }
  };
  for (let i = 0; i < n; i++) {
    if (heap.length < k) {
      heap.push(i);
      siftUp(heap.length - 1);
    } else if (worse(heap[0]!, i)) {
      heap[0] = i;
      siftDown(0);
    }
  }
  heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  return heap.map((i) => all[i]!);
}

/**
 * The best `k` of `all` (k < all.length, k small), kept best first in an array of at most k.
 * Candidates arrive in order, so a candidate goes after every kept entry it does not strictly
 * beat: ties stay in arrival order, as in the stable sort. When k are kept, a candidate that does
 * not beat the worst of them is out after one comparison, and one that does pushes the worst out.
 * No comparator calls through the sort builtin (each boxes its number result) and no scratch
 * arrays: with three engines' pages this is the common case (docs/performance.md).
 */
function bestByInsertion<T extends Pick<FusedEntry, 'fused' | 'weightSum' | 'hit'>>(all: readonly T[], k: number): T[] {
  const top: T[] = [];
  for (let i = 0; i < all.length; i++) {
    const candidate = all[i]!;
    let at = top.length;
    if (at === k) {
      if (!(compareEntries(candidate, top[k - 1]!) < 0)) continue;
      at = k - 1; // the worst kept makes room
    } else {
      top.push(candidate);
    }
    while (at > 0 && compareEntries(candidate, top[at - 1]!) < 0) {
      top[at] = top[at - 1]!;
      at--;
    }
    top[at] = candidate;
  }
  return top;
}
