/**
 * Federated pagination for fused results (§10): from where the request resumes (its gateway
 * cursor, read in paged-legs.ts), has each engine's ranked list read as deep as the requested
 * page needs (page-reads.ts), cuts the page out of the deterministic segment order (paging.ts),
 * and seals the next cursor (cursor.ts).
 *
 * A later page must see the same engines as the first one, or its fusion would differ: an engine
 * of the cursor's set that fails makes the page fail with -32010 (retry it, or restart paging).
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { setOwn } from '../protocol/copy.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { FederationContext } from './context.js';
import { canonicalRequest, cursorKey } from './cursor.js';
import { sealFusedCursor } from './fused-cursor.js';
import type { EngineHit, RankedList } from './fusion/types.js';
import { fetchSegment, initialStates, type DeeperReads, type EngineState, type FirstCalls } from './page-reads.js';
import type { Resume } from './paged-legs.js';
import { fusedPage, type PageResult } from './paging.js';
import { VENDOR_KEY, type GatewayOptions } from './vendor.js';

/**
 * Fetch rounds one page may spend crossing into later segments before answering short (depths
 * double per segment, so this reaches 2^11 × the window: past any sane pageMaxDepth).
 */
const MAX_SEGMENT_ROUNDS = 12;

/** The first calls' answers (FirstCalls), what deeper calls send (DeeperReads), and the page asked for. */
export interface PageInput extends FirstCalls, DeeperReads {
  params: JsonObject;
  k: number;
  options: GatewayOptions;
  resume: Resume | undefined;
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
  // An engine id is any config id, `__proto__` included: an own key all the same.
  for (const state of states.values()) setOwn(depth, state.list.engine, state.leg.base);
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
    nextCursor = sealFusedCursor(
      {
        method: input.method,
        expiresAt: Date.now() + fed.settings.cursorTtlMs,
        position: { kind: 'fused', engines: [...states.keys()], depth, segment: page.next.segment, offset: page.next.offset },
      },
      input.resume?.request ?? canonicalRequest(input.params, VENDOR_KEY),
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
