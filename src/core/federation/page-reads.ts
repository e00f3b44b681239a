/**
 * Reading engines deeper for a page of a fused result (§10): each engine's list as deep as a
 * window segment needs, by following the engine's own `nextCursor` when it advertises
 * `pagination`, else by asking again from the top with a larger `k` while it stays within its
 * limits (`retrieve.maxK`, `rerank.topN`) and `gateway.pageMaxDepth`. pages.ts cuts the page from
 * what this reads; a first page whose engines already answered deep enough is read at once,
 * without a promise.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { fanout } from './fanout.js';
import type { EngineHit, RankedList } from './fusion/types.js';
import { legParams, type PagedLeg } from './paged-legs.js';
import { segmentDepth, type SegmentFetch } from './paging.js';
import { sanitizeHits } from './sanitize.js';

/** Upstream calls one engine may need to reach a segment's depth. */
const MAX_DEEPEN_ROUNDS = 16;

/** One engine's part of a page being read. */
export interface EngineState {
  leg: PagedLeg;
  list: RankedList;
  /** The engine's own cursor past the end of `list`, when it paginates. */
  cursor: string | undefined;
  /** The engine said it has nothing past `list`. */
  exhausted: boolean;
  /** The largest `k` asked from the top so far (asking again with no more gets nothing new). */
  topAsked: number;
}

/** What the first calls of a paged fan-out gave. */
export interface FirstCalls {
  /** The sanitized first answers, one list per engine that answered, in engine-id order. */
  lists: readonly RankedList[];
  /** The raw first answers (for each engine's `nextCursor`) and how many hits each was asked. */
  firstAnswers: ReadonlyMap<string, { result: JsonObject; asked: number }>;
  legs: readonly PagedLeg[];
}

/** What deeper calls send: the method, and the client's params less the gateway's `_meta`. */
export interface DeeperReads {
  method: string;
  outbound: JsonObject;
}

/** Each answering engine's list, cursor and exhaustion after the first calls. */
export function initialStates(first: FirstCalls): Map<string, EngineState> {
  const legByEngine = new Map(first.legs.map((leg) => [leg.engine.id, leg]));
  const states = new Map<string, EngineState>();
  for (const list of first.lists) {
    const leg = legByEngine.get(list.engine);
    if (!leg) continue;
    const answer = first.firstAnswers.get(list.engine);
    const asked = answer?.asked ?? 0;
    const left = whatIsLeft(leg.engine, answer?.result ?? {}, list.hits.length, asked);
    states.set(list.engine, { leg, list, cursor: left.cursor, exhausted: left.exhausted, topAsked: asked });
  }
  return states;
}

/**
 * What an engine's answer says about reading it deeper: its own cursor (when it paginates), and
 * whether it has nothing more. It has nothing past what it returned when it returned fewer hits
 * than asked, or when it paginates and gave no `nextCursor` (§10: a missing `nextCursor` means no
 * more results); and reading deeper is not worth more calls when hits were dropped as malformed.
 */
function whatIsLeft(engine: Engine, result: JsonObject, kept: number, asked: number): Pick<EngineState, 'cursor' | 'exhausted'> {
  const paginates = engine.capabilities?.pagination !== undefined;
  const cursor = paginates && typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
  const returned = Array.isArray(result.hits) ? result.hits.length : 0;
  const exhausted = returned < asked || (paginates && cursor === undefined) || kept < Math.min(returned, asked);
  return { cursor, exhausted };
}

function canDeepen(state: EngineState, maxDepth: number): boolean {
  return (
    !state.exhausted &&
    state.list.hits.length < maxDepth &&
    (state.cursor !== undefined || state.topAsked < Math.min(state.leg.cap, maxDepth))
  );
}

/**
 * Read every engine as deep as `segment` needs (round by round), then hand fusion the lists;
 * synchronous when every engine already is that deep.
 */
export function fetchSegment(
  segment: number,
  states: Map<string, EngineState>,
  reads: DeeperReads,
  ctx: CallContext,
  fed: FederationContext,
): SegmentFetch | Promise<SegmentFetch> {
  const short = shortOf(states, segment, fed);
  return short.length === 0 ? listsOf(states, fed) : deepenToSegment(segment, short, states, reads, ctx, fed);
}

/** Rounds of deeper calls to the engines still `short` of `segment`, until none is (or none can give more). */
async function deepenToSegment(
  segment: number,
  short: EngineState[],
  states: Map<string, EngineState>,
  reads: DeeperReads,
  ctx: CallContext,
  fed: FederationContext,
): Promise<SegmentFetch> {
  for (let round = 0; round < MAX_DEEPEN_ROUNDS && short.length > 0; round++) {
    await deepen(
      new Map(short.map((state) => [state.list.engine, { state, ask: askFor(state, need(state, segment, fed)) }])),
      reads,
      ctx,
      fed,
    );
    short = shortOf(states, segment, fed);
  }
  return listsOf(states, fed);
}

/** How deep `segment` needs an engine's list: its window doubled per segment, within `pageMaxDepth`. */
function need(state: EngineState, segment: number, fed: FederationContext): number {
  return Math.min(segmentDepth(state.leg.base, segment), fed.settings.pageMaxDepth);
}

/** The engines that hold fewer hits than `segment` needs and can give more. */
function shortOf(states: ReadonlyMap<string, EngineState>, segment: number, fed: FederationContext): EngineState[] {
  const short: EngineState[] = [];
  for (const state of states.values()) {
    if (state.list.hits.length < need(state, segment, fed) && canDeepen(state, fed.settings.pageMaxDepth)) short.push(state);
  }
  return short;
}

function listsOf(states: ReadonlyMap<string, EngineState>, fed: FederationContext): SegmentFetch {
  const maxDepth = fed.settings.pageMaxDepth;
  const lists: RankedList[] = [];
  const deeper = new Set<string>();
  for (const state of states.values()) {
    lists.push(state.list);
    if (canDeepen(state, maxDepth)) deeper.add(state.list.engine);
  }
  return { lists, deeper };
}

interface Ask {
  k: number;
  cursor: string | undefined;
  /** Where the answer's hits go in the engine's list (0: it replaces the list). */
  from: number;
}

/** Continue from the engine's own cursor when it has one, else ask again from the top for more than last time. */
function askFor(state: EngineState, wanted: number): Ask {
  const have = state.list.hits.length;
  if (state.cursor !== undefined) return { k: Math.min(wanted - have, state.leg.cap), cursor: state.cursor, from: have };
  // Hits dropped as malformed count as read.
  return { k: Math.min(state.leg.cap, Math.max(wanted, state.topAsked + wanted - have)), cursor: undefined, from: 0 };
}

/** One round of deeper calls, concurrently; any engine failing (or answering malformed) fails the page. */
async function deepen(
  asks: Map<string, { state: EngineState; ask: Ask }>,
  reads: DeeperReads,
  ctx: CallContext,
  fed: FederationContext,
): Promise<void> {
  const outcome = await fanout(
    {
      method: reads.method,
      engines: [...asks.values()].map(({ state }) => state.leg.engine),
      paramsFor: (engine) => {
        const { state, ask } = asks.get(engine.id)!;
        return legParams(reads.outbound, state.leg, ask.k, ask.cursor);
      },
    },
    ctx,
    fed,
  );
  if (outcome.failures.length > 0) {
    const failed = outcome.failures.map((f) => f.engine);
    throw new RcpError(ErrorCode.BackendUnavailable, `engine(s) ${failed.join(', ')} failed while reading deeper results; retry the page`, {
      retryable: true,
      engines: failed,
      detail: outcome.failures.map((f) => `${f.engine}: ${f.reason}`).join('; '),
    });
  }
  for (const success of outcome.successes) {
    const { state, ask } = asks.get(success.engine.id)!;
    const clean = sanitizeHits(success.result, ask.k);
    if ('error' in clean)
      throw new RcpError(ErrorCode.BackendUnavailable, `engine ${success.engine.id} answered malformed results: ${clean.error}`, {
        retryable: true,
      });
    // mergeChunk keeps ids distinct, so the `distinctIds` mark the spread carries stays true.
    state.list = { ...state.list, hits: mergeChunk(ask.from === 0 ? [] : state.list.hits, clean.hits) };
    Object.assign(state, whatIsLeft(success.engine, success.result, clean.hits.length, ask.k));
    if (ask.cursor === undefined) state.topAsked = ask.k;
  }
}

/** Append a deeper chunk, dropping ids already present (an engine's pages may overlap). */
function mergeChunk(existing: readonly EngineHit[], chunk: readonly EngineHit[]): EngineHit[] {
  const seen = new Set(existing.map((hit) => String(hit.id)));
  const out = [...existing];
  for (const hit of chunk) {
    const key = String(hit.id);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(hit);
  }
  return out;
}
