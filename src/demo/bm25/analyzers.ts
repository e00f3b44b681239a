/**
 * Text analysis for the bundled BM25 demo engines: a tokenizer, an English
 * stopword list, and two stemmers of different strength.
 *
 *  - `sStem`: Harman's (1991) "S" stemmer — only undoes plurals
 *    (`wings` → `wing`, `bodies` → `body`). Light, conservative.
 *  - `porterStem`: Porter's (1980) suffix-stripping algorithm, written
 *    compactly from the paper (`generalization` → `gener`,
 *    `oscillating` → `oscil`). Aggressive, conflates many more forms.
 *
 * Analyzers are pure functions of a string; nothing here depends on Node.
 */

/** Lower-cases and splits on anything that is not a Unicode letter or digit. */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 0);
}

/**
 * A standard English function-word list (close to NLTK's), kept small on
 * purpose: content words such as "flow" or "theory" are never dropped even
 * though they are frequent in Cranfield — BM25's idf handles those.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between ' +
    'both but by can could did do does doing down during each few for from further had has have having he her ' +
    'here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not ' +
    'now of off on once only or other our ours ourselves out over own same she should so some such than that the ' +
    'their theirs them themselves then there these they this those through to too under until up very was we ' +
    'were what when where which while who whom why will with would you your yours yourself yourselves'
  ).split(' '),
);

/** Harman's S stemmer: the first applicable of three plural rules, or no change. */
export function sStem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && !word.endsWith('eies') && !word.endsWith('aies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('es') && !word.endsWith('aes') && !word.endsWith('ees') && !word.endsWith('oes')) {
    return word.slice(0, -1);
  }
  if (word.endsWith('s') && !word.endsWith('us') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

// ---------------------------------------------------------------------------
// Porter (1980). Notation from the paper: C = consonant run, V = vowel run,
// every word is [C](VC)^m[V]; m is the "measure" of a stem.

function isConsonant(w: string, i: number): boolean {
  const c = w[i];
  if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return false;
  if (c === 'y') return i === 0 || !isConsonant(w, i - 1);
  return true;
}

function measure(stem: string): number {
  let m = 0;
  let i = 0;
  const n = stem.length;
  while (i < n && isConsonant(stem, i)) i++;
  for (;;) {
    while (i < n && !isConsonant(stem, i)) i++;
    if (i >= n) return m;
    while (i < n && isConsonant(stem, i)) i++;
    m++;
  }
}

const hasVowel = (stem: string): boolean => [...stem].some((_, i) => !isConsonant(stem, i));
const endsDoubleConsonant = (w: string): boolean => w.length >= 2 && w[w.length - 1] === w[w.length - 2] && isConsonant(w, w.length - 1);
/** *o: stem ends consonant-vowel-consonant, the last not w, x or y (hop, not hoy). */
const endsCvc = (w: string): boolean => {
  const n = w.length;
  return n >= 3 && isConsonant(w, n - 3) && !isConsonant(w, n - 2) && isConsonant(w, n - 1) && !'wxy'.includes(w[n - 1]);
};

type Rule = readonly [suffix: string, replacement: string];
const rules = (spec: string): Rule[] =>
  spec.split(' ').map((pair) => {
    const [suffix, replacement = ''] = pair.split('>');
    return [suffix, replacement] as const;
  });

const STEP2 = rules(
  'ational>ate tional>tion enci>ence anci>ance izer>ize bli>ble alli>al entli>ent eli>e ousli>ous ' +
    'ization>ize ation>ate ator>ate alism>al iveness>ive fulness>ful ousness>ous aliti>al iviti>ive biliti>ble logi>log',
);
const STEP3 = rules('icate>ic ative> alize>al iciti>ic ical>ic ful> ness>');
const STEP4 = rules('al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize');

/**
 * Applies the longest matching rule of a step: if its condition on the stem
 * fails, no shorter rule is tried (as in the paper).
 */
function applyLongest(w: string, step: readonly Rule[], ok: (stem: string, suffix: string) => boolean): string {
  let best: Rule | undefined;
  for (const rule of step) if (w.endsWith(rule[0]) && (!best || rule[0].length > best[0].length)) best = rule;
  if (!best) return w;
  const stem = w.slice(0, w.length - best[0].length);
  return ok(stem, best[0]) ? stem + best[1] : w;
}

/** Porter's stemmer (with the two well-known revisions bli>ble and logi>log). */
export function porterStem(word: string): string {
  if (word.length <= 2 || !/^[a-z]+$/.test(word)) return word;
  let w = word;

  // Step 1a: plurals.
  if (w.endsWith('sses') || w.endsWith('ies')) w = w.slice(0, -2);
  else if (!w.endsWith('ss') && w.endsWith('s')) w = w.slice(0, -1);

  // Step 1b: -eed, -ed, -ing.
  if (w.endsWith('eed')) {
    if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1);
  } else {
    const suffix = w.endsWith('ed') ? 'ed' : w.endsWith('ing') ? 'ing' : '';
    const stem = suffix ? w.slice(0, -suffix.length) : '';
    if (suffix && hasVowel(stem)) {
      w = stem;
      if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
      else if (endsDoubleConsonant(w) && !/[lsz]$/.test(w)) w = w.slice(0, -1);
      else if (measure(w) === 1 && endsCvc(w)) w += 'e';
    }
  }

  // Step 1c: y → i after a vowel-bearing stem.
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) w = `${w.slice(0, -1)}i`;

  w = applyLongest(w, STEP2, (stem) => measure(stem) > 0);
  w = applyLongest(w, STEP3, (stem) => measure(stem) > 0);
  w = applyLongest(w, STEP4, (stem, suffix) => measure(stem) > 1 && (suffix !== 'ion' || /[st]$/.test(stem)));

  // Step 5a/5b: a final -e, a final double l.
  if (w.endsWith('e')) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem))) w = stem;
  }
  if (w.endsWith('ll') && measure(w) > 1) w = w.slice(0, -1);
  return w;
}

/** A MiniSearch `processTerm`: returns the indexed term, or null to drop it. */
export type TermProcessor = (term: string) => string | null;

/** Lower-case + stopwords + S-stemmer: the light analyzer. */
export const lightAnalyzer: TermProcessor = (term) => {
  const t = term.toLowerCase();
  return STOPWORDS.has(t) ? null : sStem(t);
};

/**
 * Memoises a stemmer. Indexing the Cranfield bodies stems ~140k tokens over a
 * ~7.5k-word vocabulary, so this roughly halves build time. The cache stops
 * growing at `maxEntries` so arbitrary query text cannot grow it without bound.
 */
export function memoize(stem: (word: string) => string, maxEntries = 50_000): (word: string) => string {
  const cache = new Map<string, string>();
  return (word) => {
    let stemmed = cache.get(word);
    if (stemmed === undefined) {
      stemmed = stem(word);
      if (cache.size < maxEntries) cache.set(word, stemmed);
    }
    return stemmed;
  };
}

const cachedPorter = memoize(porterStem);

/** Lower-case + stopwords + Porter: the aggressive analyzer. */
export const porterAnalyzer: TermProcessor = (term) => {
  const t = term.toLowerCase();
  return STOPWORDS.has(t) ? null : cachedPorter(t);
};
