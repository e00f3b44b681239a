/**
 * Team-draft interleaving (Radlinski, Kurup & Joachims, "How does clickthrough data reflect
 * retrieval quality?", CIKM 2008): two arms' ranked lists are merged into one list of k hits; at
 * each step the team with fewer picks so far (a coin flip on a tie) contributes its best hit not
 * already shown, and that hit is credited to the team. A user's clicks (or §7.16 `feedback`
 * signals) on a team's hits are then votes for that arm.
 *
 * Invariants while both lists still have unshown hits: every prefix holds picks of the two teams
 * within one of each other; no id appears twice; each team's picks keep their own list's order.
 * When one list runs out the other fills the remaining places (each hit still credited to the
 * team it came from), so the result has min(k, |A ∪ B|) hits.
 */
import type { Random } from './random.js';

export type Team = 'A' | 'B';

export interface InterleavedHit<T> {
  item: T;
  id: string;
  team: Team;
}

export interface Interleaving<T> {
  hits: InterleavedHit<T>[];
  /** Hit id → the team that contributed it. */
  teams: Map<string, Team>;
}

export function teamDraft<T>(a: readonly T[], b: readonly T[], k: number, random: Random, idOf: (item: T) => string): Interleaving<T> {
  const hits: InterleavedHit<T>[] = [];
  const teams = new Map<string, Team>();
  const cursor = { A: 0, B: 0 };
  const picks = { A: 0, B: 0 };
  const lists = { A: a, B: b };
  // Skip past hits already shown (the other team's picks, or a list's own duplicates).
  const advance = (team: Team): boolean => {
    const list = lists[team];
    while (cursor[team] < list.length && teams.has(idOf(list[cursor[team]]!))) cursor[team]++;
    return cursor[team] < list.length;
  };
  while (hits.length < k) {
    const aLeft = advance('A');
    const bLeft = advance('B');
    if (!aLeft && !bLeft) break;
    let team: Team;
    if (!bLeft) team = 'A';
    else if (!aLeft) team = 'B';
    else if (picks.A !== picks.B) team = picks.A < picks.B ? 'A' : 'B';
    else team = random() < 0.5 ? 'A' : 'B';
    const item = lists[team][cursor[team]]!;
    const id = idOf(item);
    hits.push({ item, id, team });
    teams.set(id, team);
    picks[team]++;
    cursor[team]++;
  }
  return { hits, teams };
}

export type Outcome = 'A' | 'B' | 'tie';

export interface Credit {
  A: number;
  B: number;
  /** The team with more credited hits wins the impression; equal credit is a tie. */
  outcome: Outcome;
}

/** Credit for one impression: each distinct credited id counts once for the team that contributed it. */
export function creditClicks(teams: ReadonlyMap<string, Team>, clicked: Iterable<string>): Credit {
  const credit = { A: 0, B: 0 };
  const counted = new Set<string>();
  for (const id of clicked) {
    const team = teams.get(id);
    if (team === undefined || counted.has(id)) continue;
    counted.add(id);
    credit[team]++;
  }
  return { ...credit, outcome: credit.A > credit.B ? 'A' : credit.B > credit.A ? 'B' : 'tie' };
}
