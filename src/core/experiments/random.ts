/**
 * Seeded randomness for reproducible experiments (interleaving coin flips, randomisation tests,
 * fold shuffles): xoroshiro128+ from pure-rand, so a seed replays the same sequence anywhere.
 */
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';

/** A generator of uniform numbers in [0, 1), fully determined by `seed` (an integer). */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  const rng = xoroshiro128plus(seed | 0);
  return () => uniformFloat64(rng);
}

/** Fisher–Yates shuffle of a copy of `items`. */
export function shuffled<T>(items: readonly T[], random: Random): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
