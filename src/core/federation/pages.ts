/**
 * Federated pagination for fused results (§10): from where the request resumes (its gateway
 * cursor, read in paged-legs.ts), fetches each engine's ranked list as deep as the requested page needs, cuts the page out of the
 * deterministic segment order (paging.ts), and seals the next cursor. Engines are deepened by
 * following their own `nextCursor` when they advertise `pagination`, else by asking again with a
 * larger `k` while it stays within their limits (`retrieve.maxK`, `rerank.topN`); past
 * `gateway.pageMaxDepth` ranks per engine the result set ends.
 *
 * A later page must see the same engines as the first one, or its fusion would differ: an engine
 * of the cursor's set that fails makes the page fail with -32010 (retry it, or restart paging).
 *
 * What each leg asks sits in paged-legs.ts, the pure parts apart too (paging.ts order, cursor.ts
 * sealing).
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { cursorKey, requestFingerprint, sealCursor } from './cursor.js';
import { fanout } from './fanout.js';
import type { EngineHit, RankedList } from './fusion/types.js';
import { legParams, type PagedLeg, type Resume } from './paged-legs.js';
import { fusedPage, segmentDepth, type PageResult, type SegmentFetch } from './paging.js';
import { sanitizeHits } from './sanitize.js';
import { VENDOR_KEY, type GatewayOptions } from './vendor.js';

/**
 * Fetch rounds one page may spend crossing into later segments before answering short (depths
 * double per segment, so this reaches 2^11 × the window: past any sane pageMaxDepth).
 */
const MAX_SEGMENT_ROUNDS = 12;
/** Upstream calls one engine may need to reach a segment's depth. */
const MAX_DEEPEN_ROUNDS = 16;

interface EngineState {
  leg: PagedLeg;
  list: RankedList;
  /** The engine's own cursor past the end of `list`, when it paginates. */
  cursor: string | undefined;
  /** The engine said it has nothing past `list`. */
  exhausted: boolean;
  /** The largest `k` asked from the top so far (asking again with no more gets nothing new). */
  topAsked: number;
}

export interface PageInput {
  method: string;
  params: JsonObject;
  k: number;
  options: GatewayOptions;
  /** The sanitized first answers, one list per engine that answered, in engine-id order. */
  lists: RankedList[];
  /** The raw first answers (for each engine's `nextCursor`) and how many hits each was asked. */
  firstAnswers: ReadonlyMap<string, { result: JsonObject; asked: number }>;
  legs: readonly PagedLeg[];
  resume: Resume | undefined;
  /** What goes upstream (the client's params less the gateway's `_meta`), for deepening calls. */
  outbound: JsonObject;
}

export interface PageOutput {
  hits: EngineHit[];
  method: GatewayOptions['fusion'];
  notes: string[];
  nextCursor: string | undefined;
}

/**
 * Synchronous when no engine needs reading deeper (a first page, usually): only a page that
 * deepens waits, so the common answer costs no promise here.
 */
export function servePage(input: PageInput, ctx: CallContext, fed: FederationContext): PageOutput | Promise<PageOutput> {
  const { resume, options } = input;
  if (resume) requireFirstPageEngines(resume, input.lists);
  const states = initialStates(input);
  const start = { segment: resume?.segment ?? 0, offset: resume?.offset ?? 0 };
  const depth: Record<string, number> = {};
  for (const state of states.values()) depth[state.list.engine] = state.leg.base;
  const page = fusedPage(
    start,
    {
      k: input.k,
      method: options.fusion,
      depth,
      maxRounds: MAX_SEGMENT_ROUNDS,
      fusion: { rrfK: options.rrfK, dedup: options.dedup },
    },
    (segment) => fetchSegment(segment, states, input, ctx, fed),
  );
  return page instanceof Promise
    ? page.then((done) => pageOutput(done, input, states, depth, fed))
    : pageOutput(page, input, states, depth, fed);
}

/** The page as answered, with the next page's cursor when there is one. */
function pageOutput(
  page: PageResult,
  input: PageInput,
  states: ReadonlyMap<string, EngineState>,
  depth: Record<string, number>,
  fed: FederationContext,
): PageOutput {
  let nextCursor: string | undefined;
  // §10: a cursor only while `pagination` is advertised.
  if (page.next && fed.settings.pagination) {
    nextCursor = sealCursor(
      {
        method: input.method,
        fingerprint: input.resume?.fingerprint ?? requestFingerprint(input.params, VENDOR_KEY),
        expiresAt: Date.now() + fed.settings.cursorTtlMs,
        position: { kind: 'fused', engines: [...states.keys()], depth, segment: page.next.segment, offset: page.next.offset },
      },
      cursorKey(fed.settings.cursorSecret),
    );
  }
  return { hits: page.hits, method: page.method, notes: page.notes, nextCursor };
}

/** A later page needs the first page's engine set, exactly: a missing one would change the fused order. */
function requireFirstPageEngines(resume: Resume, lists: readonly RankedList[]): void {
  const present = new Set(lists.map((list) => list.engine));
  const missing = resume.engines.filter((id) => !present.has(id));
  if (missing.length > 0) {
    throw new RcpError(
      ErrorCode.BackendUnavailable,
      `engine(s) ${missing.join(', ')} of this result set did not answer; retry the page or restart pagination`,
      {
        retryable: true,
        engines: missing,
        detail: 'a later page needs every engine that formed the first page',
      },
    );
  }
}

/** Each answering engine's list, cursor and exhaustion after the first calls. */
function initialStates(input: PageInput): Map<string, EngineState> {
  const legByEngine = new Map(input.legs.map((leg) => [leg.engine.id, leg]));
  const states = new Map<string, EngineState>();
  for (const list of input.lists) {
    const leg = legByEngine.get(list.engine);
    if (!leg) continue;
    const first = input.firstAnswers.get(list.engine);
    const result = first?.result ?? {};
    states.set(list.engine, {
      leg,
      list,
      cursor: paginates(leg.engine) && typeof result.nextCursor === 'string' ? result.nextCursor : undefined,
      exhausted: isExhausted(leg.engine, result, first?.asked ?? 0) || dropped(result, list.hits.length, first?.asked ?? 0),
      topAsked: first?.asked ?? 0,
    });
  }
  return states;
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
function fetchSegment(
  segment: number,
  states: Map<string, EngineState>,
  input: PageInput,
  ctx: CallContext,
  fed: FederationContext,
): SegmentFetch | Promise<SegmentFetch> {
  return shortOf(states, segment, fed).length === 0 ? listsOf(states, fed) : deepenToSegment(segment, states, input, ctx, fed);
}

async function deepenToSegment(
  segment: number,
  states: Map<string, EngineState>,
  input: PageInput,
  ctx: CallContext,
  fed: FederationContext,
): Promise<SegmentFetch> {
  const maxDepth = fed.settings.pageMaxDepth;
  for (let round = 0; round < MAX_DEEPEN_ROUNDS; round++) {
    const short = shortOf(states, segment, fed);
    if (short.length === 0) break;
    const need = (state: EngineState): number => Math.min(segmentDepth(state.leg.base, segment), maxDepth);
    await deepen(new Map(short.map((state) => [state.list.engine, { state, ask: askFor(state, need(state)) }])), input, ctx, fed);
  }
  return listsOf(states, fed);
}

/** The engines that hold fewer hits than `segment` needs and can give more. */
function shortOf(states: ReadonlyMap<string, EngineState>, segment: number, fed: FederationContext): EngineState[] {
  const maxDepth = fed.settings.pageMaxDepth;
  const short: EngineState[] = [];
  for (const state of states.values()) {
    if (state.list.hits.length < Math.min(segmentDepth(state.leg.base, segment), maxDepth) && canDeepen(state, maxDepth)) short.push(state);
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
  input: PageInput,
  ctx: CallContext,
  fed: FederationContext,
): Promise<void> {
  const outcome = await fanout(
    {
      method: input.method,
      engines: [...asks.values()].map(({ state }) => state.leg.engine),
      paramsFor: (engine) => {
        const { state, ask } = asks.get(engine.id)!;
        return legParams(input.outbound, state.leg, ask.k, ask.cursor);
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
    state.list = { ...state.list, hits: mergeChunk(ask.from === 0 ? [] : state.list.hits, clean.hits) };
    state.cursor = paginates(success.engine) && typeof success.result.nextCursor === 'string' ? success.result.nextCursor : undefined;
    state.exhausted = isExhausted(success.engine, success.result, ask.k) || dropped(success.result, clean.hits.length, ask.k);
    if (ask.cursor === undefined) state.topAsked = ask.k;
  }
}

function paginates(engine: Engine): boolean {
  return engine.capabilities?.pagination !== undefined;
}

/**
 * An engine has nothing past what it returned when it returned fewer hits than asked, or when it
 * paginates and gave no `nextCursor` (§10: a missing `nextCursor` means no more results).
 */
function isExhausted(engine: Engine, result: JsonObject, asked: number): boolean {
  const returned = Array.isArray(result.hits) ? result.hits.length : 0;
  return returned < asked || (paginates(engine) && typeof result.nextCursor !== 'string');
}

/** Hits were dropped as malformed: reading deeper into such an engine is not worth more calls. */
function dropped(result: JsonObject, kept: number, asked: number): boolean {
  const returned = Array.isArray(result.hits) ? result.hits.length : 0;
  return kept < Math.min(returned, asked);
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
