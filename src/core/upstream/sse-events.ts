/**
 * The events of one SSE answer (§5.2), for every HTTP transport: progress frames for this leg's
 * token and log frames are relayed as they come (§9, §17.1); the response frame is kept as
 * `final`; a frame that is not JSON is a `failure`. The transport feeds `parser` the decoded
 * bytes and stops reading once `final` or `failure` is set.
 */
import { createParser } from 'eventsource-parser';
import { isJsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from './errors.js';
import type { UpstreamCallOptions } from './transport.js';

export class SseEvents {
  final: unknown;
  failure: UpstreamError | undefined;
  readonly parser = createParser({ onEvent: (event) => this.onEvent(event.data) });

  constructor(
    private readonly token: string | undefined,
    private readonly options: UpstreamCallOptions,
  ) {}

  private onEvent(data: string): void {
    if (this.final !== undefined || this.failure) return;
    let frame: unknown;
    try {
      frame = JSON.parse(data);
    } catch {
      this.failure = new UpstreamError('malformed', 'SSE frame is not valid JSON');
      return;
    }
    if (!isJsonObject(frame)) return;
    if (frame.method === 'notifications/progress' && isJsonObject(frame.params)) {
      // Frames for other tokens are ignored (§9).
      if (this.token !== undefined && frame.params.progressToken === this.token) this.options.onProgress?.(frame.params);
      return;
    }
    if (frame.method === 'notifications/log' && isJsonObject(frame.params)) {
      this.options.onLog?.(frame.params);
      return;
    }
    if ('result' in frame || 'error' in frame) this.final = frame;
  }
}
