/**
 * Hostile-upstream hygiene (§15.1: upstream content is untrusted). Turns an engine's `retrieve`
 * result into a clean ranked list: hits must be objects with a string/number id and a finite
 * score; duplicates keep their first (best) rank; extra hits are cut to what was asked; optional
 * fields of the wrong JSON type are dropped so nothing invalid reaches the client.
 */
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from '../upstream/errors.js';
import type { FederationContext } from './context.js';
import type { EngineHit } from './fusion/types.js';
import type { LegFailure } from './leg.js';

export interface SanitizedList {
  hits: EngineHit[];
  /** Problems found, for `usage.notes` (empty when the answer was clean). */
  problems: string[];
}

export function sanitizeHits(result: JsonObject, limit: number): SanitizedList | { error: string } {
  const raw = result.hits;
  if (!Array.isArray(raw)) return { error: '`hits` is not an array' };
  const hits: EngineHit[] = [];
  const seen = new SeenIds();
  let badId = 0;
  let badScore = 0;
  let duplicates = 0;
  for (let i = 0; i < raw.length && hits.length < limit; i++) {
    const item: unknown = raw[i];
    if (!isJsonObject(item)) {
      badId++;
      continue;
    }
    const id = item.id;
    if (!(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))) {
      badId++;
      continue;
    }
    const score = item.score;
    if (typeof score !== 'number' || !Number.isFinite(score)) {
      badScore++;
      continue;
    }
    if (!seen.add(String(id))) {
      duplicates++;
      continue;
    }
    hits.push(cleanHit(item, id, score));
  }
  const problems: string[] = [];
  if (badId > 0) problems.push(`${badId} hit(s) without a valid id dropped`);
  if (badScore > 0) problems.push(`${badScore} hit(s) with a non-numeric score dropped`);
  if (duplicates > 0) problems.push(`${duplicates} duplicate hit id(s) dropped`);
  if (raw.length > limit && hits.length === limit) problems.push(`answered ${raw.length} hits for ${limit} asked; extra hits cut`);
  return { hits, problems };
}

/** Up to this many ids, a scan of the ids kept finds a repeat sooner than a Set would. */
const SCANNED_IDS = 32;

/**
 * The stringified ids kept so far. A page of ids is scanned: comparing a fresh id string with a
 * few dozen others costs less than hashing it into a Set that grows as it fills (with three
 * engines, the Set was the largest single cost of sanitizing; docs/performance.md). Past
 * SCANNED_IDS the ids move into a Set, so a long answer stays linear.
 */
class SeenIds {
  private readonly scanned: string[] = [];
  private hashed: Set<string> | undefined;

  /** Record `id`; false when it was already there. */
  add(id: string): boolean {
    const { hashed, scanned } = this;
    if (hashed !== undefined) {
      if (hashed.has(id)) return false;
      hashed.add(id);
      return true;
    }
    for (let i = 0; i < scanned.length; i++) if (scanned[i] === id) return false;
    scanned.push(id);
    if (scanned.length > SCANNED_IDS) this.hashed = new Set(scanned);
    return true;
  }
}

/**
 * Keep only fields whose JSON type matches the Hit schema; never mutate the engine's object. A
 * clean hit (the usual case) is returned as it is.
 */
function cleanHit(item: JsonObject, id: string | number, score: number): EngineHit {
  if (typedFieldsFit(item)) return item as EngineHit;
  const out: EngineHit = { ...item, id, score };
  for (const key of Object.keys(out)) if (!fieldFits(key, out[key])) delete out[key];
  return out;
}

/**
 * Whether every field the Hit schema types is absent or of its type (`fieldFits` for each). One
 * read per field by name, not a walk over the hit's keys: hits of one answer share a shape, so each
 * read is a cached lookup, present or absent, where a `for…in` walk reads each key generically
 * (docs/performance.md). Hits are plain data (JSON's, or an in-process adapter's objects): a read
 * by name is what the walk saw. An own field holding `undefined` (JSON has none; an adapter could
 * make one) reads as absent here and is kept; `JSON.stringify` leaves it out of the answer.
 */
function typedFieldsFit(item: JsonObject): boolean {
  const { text, modality, unit, meta, citation, provenance, trust, chunk, scores, content, vector, confidence, level } = item;
  // `fieldFits` with a constant key: each read stays its own cached lookup, and the rules are
  // stated once (fieldFits), for this check and for cleaning a copy.
  return (
    (text === undefined || fieldFits('text', text)) &&
    (modality === undefined || fieldFits('modality', modality)) &&
    (unit === undefined || fieldFits('unit', unit)) &&
    (meta === undefined || fieldFits('meta', meta)) &&
    (citation === undefined || fieldFits('citation', citation)) &&
    (provenance === undefined || fieldFits('provenance', provenance)) &&
    (trust === undefined || fieldFits('trust', trust)) &&
    (chunk === undefined || fieldFits('chunk', chunk)) &&
    (scores === undefined || fieldFits('scores', scores)) &&
    (content === undefined || fieldFits('content', content)) &&
    (vector === undefined || fieldFits('vector', vector)) &&
    (confidence === undefined || fieldFits('confidence', confidence)) &&
    (level === undefined || fieldFits('level', level))
  );
}

/**
 * Whether a hit field holds the JSON type the Hit schema gives it (any value for other keys): read
 * by name in `typedFieldsFit`, key by key for cleaning a copy. Held to a reference over plain data
 * hits by test/unit/sanitize-hits.test.ts.
 */
function fieldFits(key: string, value: unknown): boolean {
  switch (key) {
    case 'text':
    case 'modality':
    case 'unit':
      return typeof value === 'string';
    case 'meta':
    case 'citation':
    case 'provenance':
    case 'trust':
    case 'chunk':
    case 'scores':
      return isJsonObject(value);
    case 'content':
    case 'vector':
      return Array.isArray(value);
    case 'confidence':
      return isUnit(value);
    case 'level':
      return Number.isSafeInteger(value) && (value as number) >= 0;
    default:
      return true;
  }
}

function isUnit(value: unknown): boolean {
  return typeof value === 'number' && value >= 0 && value <= 1;
}

/**
 * The one shape fault that voids a whole hit-list answer: `hits` missing or not an array. Run
 * inside the engine's breaker (FanoutPlan.validate) so it counts as an engine fault; individual
 * bad hits are sanitized later with a note instead.
 */
export function requireHitsArray(result: JsonObject): void {
  if (!Array.isArray(result.hits)) throw new UpstreamError('malformed', '`hits` is not an array');
}

/**
 * The full story of a failed leg, for the gateway's log only: clients get the generic
 * `publicDetail` (upstream/errors.ts), never the local error text with engine addresses.
 * A leg the client abandoned (cancel, disconnect, deadline) is routine and logged at debug.
 */
export function logLegFailure(fed: FederationContext, engine: string, method: string, failure: LegFailure): void {
  const fields = { engine, method, reason: failure.reason, code: failure.code, detail: failure.error.message.slice(0, 2_000) };
  if (failure.error.reason === 'aborted') fed.logger.debug(fields, 'engine call abandoned');
  else fed.logger.warn(fields, 'engine call failed');
}
