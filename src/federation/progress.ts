/**
 * Aggregated progress for one federated call (§9). Each upstream leg reports under its own
 * token; the client sees one stream under its own token: `progress` is the weighted mean over
 * legs, monotone non-decreasing in [0, 1]; `stage`/`message` say which engine is where; leg
 * completions add "n of m engines answered" with the running fusion in `partial.hits`.
 * Frames are coalesced to a bounded rate so a chatty engine cannot flood the client.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { ProgressUpdate } from '../server/service.js';

interface Leg {
  weight: number;
  progress: number;
  done: boolean;
}

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

  /** An upstream progress frame for `engine` (already matched to that leg's token). */
  legProgress(engine: string, frame: JsonObject): void {
    const leg = this.legs.get(engine);
    if (!leg || leg.done || this.finished) return;
    const value = typeof frame.progress === 'number' && Number.isFinite(frame.progress) ? Math.min(1, Math.max(0, frame.progress)) : leg.progress;
    // Per leg, too, progress never goes backwards.
    if (value > leg.progress) leg.progress = value;
    const stage = typeof frame.stage === 'string' ? frame.stage : 'recall';
    const detail = typeof frame.message === 'string' ? `: ${frame.message.slice(0, 200)}` : '';
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
    const value = sum / this.totalWeight;
    return Math.min(1, Math.max(this.lastEmitted, value));
  }

  private offer(update: ProgressUpdate, withPartial: boolean): void {
    // Keep the newest stage text; partial hits are recomputed at send time so they are current.
    const merged: ProgressUpdate = { ...update };
    if (withPartial || this.pending?.partial) merged.partial = {};
    this.pending = merged;
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
