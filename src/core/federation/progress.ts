/**
 * Aggregated progress for one federated call (§9). Each upstream leg reports under its own
 * token; the client sees one stream under its own token: `progress` is the weighted mean over
 * legs, monotone non-decreasing in [0, 1]; `stage`/`message` say which engine is where; leg
 * completions add "n of m engines answered" with the running fusion in `partial.hits`.
 * Frames are coalesced to a bounded rate so a chatty engine cannot flood the client.
 */
import { shallowCopy } from '../protocol/copy.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext, ProgressUpdate } from '../service/contract.js';

interface Leg {
  weight: number;
  progress: number;
  done: boolean;
}

/**
 * A leg still running counts for at most this share of its weight, whatever it reports: an
 * engine saying 1.0 has not answered yet, and 1.0 overall means every leg is done.
 */
const RUNNING_CEILING = 0.95;
const MAX_STAGE_CHARS = 32;
const MAX_MESSAGE_CHARS = 200;

export class ProgressRelay {
  private readonly legs = new Map<string, Leg>();
  private readonly totalWeight: number;
  private readonly minIntervalMs: number;
  private lastEmitted = -1;
  private lastSentAt = -Infinity;
  private pending: ProgressUpdate | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private finished = false;
  private answered = 0;
  private failed = 0;
  frames = 0;

  constructor(
    private readonly emit: (update: ProgressUpdate) => void,
    legs: ReadonlyArray<{ engine: string; weight: number }>,
    framesPerSecond: number,
    /** Running fusion of the legs that have answered (for `partial.hits`). */
    private readonly partialHits: () => JsonObject[],
  ) {
    let total = 0;
    for (const leg of legs) {
      const weight = leg.weight > 0 ? leg.weight : 1;
      this.legs.set(leg.engine, { weight, progress: 0, done: false });
      total += weight;
    }
    this.totalWeight = total > 0 ? total : 1;
    this.minIntervalMs = 1000 / Math.max(1, framesPerSecond);
  }

  /**
   * An upstream progress frame for `engine`'s leg (already matched to that leg's own token, so
   * the engine's token never reaches the client).
   */
  legProgress(engine: string, frame: JsonObject): void {
    const leg = this.legs.get(engine);
    if (!leg || leg.done || this.finished) return;
    const value =
      typeof frame.progress === 'number' && Number.isFinite(frame.progress)
        ? Math.min(RUNNING_CEILING, Math.max(0, frame.progress))
        : leg.progress;
    // Per leg, too, progress never goes backwards.
    if (value > leg.progress) leg.progress = value;
    // Upstream text is untrusted: bounded, and the stage a short label (§9 pipeline stages).
    const stage = typeof frame.stage === 'string' && frame.stage.length > 0 ? frame.stage.slice(0, MAX_STAGE_CHARS) : 'recall';
    const detail = typeof frame.message === 'string' ? `: ${frame.message.slice(0, MAX_MESSAGE_CHARS)}` : '';
    this.offer({ stage, message: `${stage} from engine ${engine}${detail}` }, false);
  }

  /** A leg finished (answered or failed). */
  legDone(engine: string, ok: boolean, reason?: string): void {
    const leg = this.legs.get(engine);
    if (!leg || leg.done || this.finished) return;
    leg.done = true;
    leg.progress = 1;
    if (ok) this.answered++;
    else this.failed++;
    const total = this.legs.size;
    const what = ok ? `engine ${engine} answered` : `engine ${engine} failed${reason ? ` (${reason})` : ''}`;
    this.offer({ stage: 'fuse', message: `${this.answered} of ${total} engines answered; ${what}` }, true);
  }

  /**
   * Stop: flush the last coalesced frame (still before the final response), then send nothing
   * more (§9: nothing after the final response).
   */
  finish(): void {
    if (this.pending) this.flush();
    this.finished = true;
    clearTimeout(this.timer);
    this.pending = undefined;
  }

  private aggregate(): number {
    let sum = 0;
    for (const leg of this.legs.values()) sum += leg.weight * leg.progress;
    // Four decimals are plenty for a progress bar and keep float noise off the wire.
    const value = Math.round((sum / this.totalWeight) * 10_000) / 10_000;
    return Math.min(1, Math.max(this.lastEmitted, value));
  }

  private offer(update: ProgressUpdate, withPartial: boolean): void {
    // Coalescing keeps the newest text, except that a waiting leg-done frame ("n of m engines
    // answered") outranks an engine's stage text, so the words always describe `partial.hits`.
    // The aggregate and partial hits are computed at send time, so they are current either way.
    if (withPartial || !this.pending?.partial) {
      // Copied, then extended (protocol/copy.ts says why not `{ ...update, partial }`).
      const pending = shallowCopy(update);
      if (withPartial) pending.partial = {};
      this.pending = pending;
    }
    const now = performance.now();
    const wait = this.lastSentAt + this.minIntervalMs - now;
    if (wait <= 0) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
      }, wait);
      this.timer.unref?.();
    }
  }

  private flush(): void {
    const update = this.pending;
    this.pending = undefined;
    if (!update || this.finished) return;
    const progress = this.aggregate();
    this.lastEmitted = progress;
    this.lastSentAt = performance.now();
    const frame: ProgressUpdate = { progress, stage: update.stage, message: update.message };
    if (update.partial && this.answered > 0) frame.partial = { hits: this.partialHits() };
    this.frames++;
    this.emit(frame);
  }
}

/**
 * Progress of a call served by one engine (routed methods, §9): never backwards, and at most
 * `framesPerSecond` frames, the newest kept while waiting. A frame still waiting when the answer
 * leaves is dropped by the session (nothing follows the final response), so no flush is needed.
 */
export function boundedProgress(emit: (update: ProgressUpdate) => void, framesPerSecond: number): (update: ProgressUpdate) => void {
  const minIntervalMs = 1000 / Math.max(1, framesPerSecond);
  let lastSentAt = -Infinity;
  let high: number | undefined;
  let pending: ProgressUpdate | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = (): void => {
    timer = undefined;
    if (!pending) return;
    const update = pending;
    pending = undefined;
    lastSentAt = performance.now();
    emit(update);
  };
  return (update) => {
    if (update.progress !== undefined) high = Math.max(high ?? 0, update.progress);
    pending = shallowCopy(update); // then extended: protocol/copy.ts
    if (high !== undefined) pending.progress = high;
    const wait = lastSentAt + minIntervalMs - performance.now();
    if (wait <= 0) flush();
    else if (!timer) {
      timer = setTimeout(flush, wait);
      timer.unref?.();
    }
  };
}

/** `ctx` with its progress sink bounded as above (unchanged when the client asked for none). */
export function withBoundedProgress(ctx: CallContext, framesPerSecond: number): CallContext {
  return ctx.progress ? { ...ctx, progress: boundedProgress(ctx.progress, framesPerSecond) } : ctx;
}

/** One engine's progress frame as the client sees it (routed calls, a single writer): bounded, tagged with the engine. */
export function progressFrom(engineId: string, frame: JsonObject): { progress?: number; stage?: string; message?: string } {
  const progress =
    typeof frame.progress === 'number' && Number.isFinite(frame.progress) ? Math.min(1, Math.max(0, frame.progress)) : undefined;
  const stage = typeof frame.stage === 'string' && frame.stage.length > 0 ? frame.stage.slice(0, 32) : undefined; // untrusted: bounded
  const message = `${stage ?? 'working'} from engine ${engineId}${typeof frame.message === 'string' ? `: ${frame.message.slice(0, 200)}` : ''}`;
  return { ...(progress !== undefined ? { progress } : {}), ...(stage ? { stage } : {}), message };
}
