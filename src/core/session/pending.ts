/**
 * One request between dispatch and its answer: the single gate through which its response
 * leaves (everything after the first is dropped, §13.1 "exactly one answer"), the signal that
 * aborts its work, and its deadline.
 */
import { Cancellation } from '../service/cancellation.js';
import { ErrorCode } from '../protocol/errors.js';
import { errorResponse, type RequestId, type ResponseMessage } from '../protocol/jsonrpc.js';

export class PendingRequest {
  /** Aborts the request's work; a Cancellation, not an AbortController (cancellation.ts says why). */
  readonly controller = new Cancellation();
  /** Resolves with the one response that leaves. */
  readonly answer: Promise<ResponseMessage>;
  private resolveAnswer!: (response: ResponseMessage) => void;
  private settled = false;
  private readonly timer: ReturnType<typeof setTimeout>;

  /**
   * At the deadline the work is aborted; `graceMs` later, should the service not have answered by
   * then itself, the request is answered -32014 (a safety net). `onSettled` runs once, first.
   */
  constructor(
    id: RequestId,
    deadlineMs: number,
    graceMs: number,
    private readonly onSettled: () => void,
  ) {
    this.answer = new Promise<ResponseMessage>((resolve) => {
      this.resolveAnswer = resolve;
    });
    this.timer = setTimeout(() => {
      this.controller.abort('deadline');
      setTimeout(
        () =>
          this.settle(errorResponse(id, { code: ErrorCode.Timeout, message: 'deadline exceeded', data: { retryable: true, deadlineMs } })),
        graceMs,
      ).unref?.();
    }, deadlineMs);
    this.timer.unref?.();
  }

  get answered(): boolean {
    return this.settled;
  }

  settle(response: ResponseMessage): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.onSettled();
    this.resolveAnswer(response);
  }
}
