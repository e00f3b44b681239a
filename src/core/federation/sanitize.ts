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
  const seen = new Set<string>();
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
    const key = String(id);
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    seen.add(key);
    hits.push(cleanHit(item, id, score));
  }
  const problems: string[] = [];
  if (badId > 0) problems.push(`${badId} hit(s) without a valid id dropped`);
  if (badScore > 0) problems.push(`${badScore} hit(s) with a non-numeric score dropped`);
  if (duplicates > 0) problems.push(`${duplicates} duplicate hit id(s) dropped`);
  if (raw.length > limit && hits.length === limit) problems.push(`answered ${raw.length} hits for ${limit} asked; extra hits cut`);
  return { hits, problems };
}

/**
 * Keep only fields whose JSON type matches the Hit schema; never mutate the engine's object. A
 * clean hit (the usual case) is checked in one pass over the keys it has, not one lookup per
 * field the schema knows.
 */
function cleanHit(item: JsonObject, id: string | number, score: number): EngineHit {
  let clean = true;
  for (const key in item) {
    if (!fieldFits(key, item[key])) {
      clean = false;
      break;
    }
  }
  if (clean) return item as EngineHit;
  const out: EngineHit = { ...item, id, score };
  for (const key of Object.keys(out)) if (!fieldFits(key, out[key])) delete out[key];
  return out;
}

/** Whether a hit field holds the JSON type the Hit schema gives it (any value for other keys). */
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
