/**
 * The benchmark's canned hits, shared by the fast engines (engine.js) and the in-memory engines
 * of bench/core-cost.js, so both serve byte-for-byte the same answers: engine `e`'s ranking of an
 * overlapping 2×`count`-document set (ids overlap across engines, ranks differ).
 */
export function cannedHits(e, count) {
  const hits = [];
  for (let rank = 0; rank < count; rank++) {
    const doc = (rank * 3 + e * 7) % (2 * count);
    hits.push({
      id: `doc-${doc}`,
      score: Number((20 - rank * 0.75).toFixed(2)),
      text: `Document ${doc}: rank fusion across retrieval engines, answered by bench engine ${e} for the benchmark query.`,
      citation: { uri: `bench://corpus/doc-${doc}` },
    });
  }
  return hits;
}
