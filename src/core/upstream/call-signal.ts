/**
 * The abort signal of one upstream call: aborted by the caller's signal (cancel, disconnect,
 * gateway deadline) or by the call's own timeout, whichever comes first, and able to tell the
 * two apart afterwards. Web-standard only (AbortController, setTimeout), so every runtime's
 * transport uses the same one.
 */
import type { AbortLike } from '../service/cancellation.js';

export interface CallSignal {
  signal: AbortSignal;
  timedOut: () => boolean;
  /** Clear the timer and unhook from the caller's signal once the call settled. */
  dispose: () => void;
}

/**
 * One AbortController per call. AbortSignal.timeout + AbortSignal.any did the same but build
 * transferable, composite signals: measurably more work on every upstream call.
 */
export function callSignal(parent: AbortLike | undefined, timeoutMs: number): CallSignal {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, timeoutMs);
  // Node: a pending call timer must not keep a finished process alive. Other runtimes have no unref.
  (timer as { unref?: () => void }).unref?.();
  const onAbort = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}
