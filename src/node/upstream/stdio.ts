/**
 * Outbound stdio transport: one child process per engine, NDJSON (§5.1), many concurrent calls
 * multiplexed by the gateway's own ids, progress routed by per-leg token, child stderr forwarded
 * to the gateway log. Aborting a call sends `notifications/cancel` with the upstream id (§7.14).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { isJsonObject, type JsonObject } from '../../core/protocol/jsonrpc.js';
import { LineSplitter } from '../../core/protocol/ndjson.js';
import { UpstreamError, abortedCall } from '../../core/upstream/errors.js';
import { nextProgressToken, settleResponse, withProgressToken } from '../../core/upstream/frames.js';
import type { TransportLifecycle, UpstreamCallOptions, UpstreamTransport } from '../../core/upstream/transport.js';

export interface StdioTransportOptions {
  command: string[];
  cwd?: string;
  env?: Readonly<Record<string, string>>;
  /** Child stderr lines, for the gateway log. */
  onStderr?: (line: string) => void;
  /** Upstream log frames not tied to a call. */
  onLog?: (frame: JsonObject) => void;
  /** The child went away (its calls in flight have already failed). */
  onExit?: (code: number | null, signal: string | null) => void;
  maxLineBytes: number;
}

interface Pending {
  resolve: (result: JsonObject) => void;
  reject: (err: UpstreamError) => void;
  token: string | undefined;
  onProgress: ((frame: JsonObject) => void) | undefined;
  onLog: ((frame: JsonObject) => void) | undefined;
}

/** Owns its child process: `lifecycle` is the transport itself (start, alive, pid, kill). */
export class StdioTransport implements UpstreamTransport, TransportLifecycle {
  readonly kind = 'stdio' as const;
  readonly lifecycle: TransportLifecycle = this;
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly pending = new Map<number, Pending>();
  private readonly byToken = new Map<string, number>();
  private nextId = 1;
  private exited = false;

  constructor(private readonly options: StdioTransportOptions) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get alive(): boolean {
    return this.child !== undefined && !this.exited;
  }

  /** Spawn the child. Resolves once it is spawned (not yet initialized). */
  start(): Promise<void> {
    const [program, ...args] = this.options.command;
    this.exited = false;
    const child = spawn(program!, args, {
      cwd: this.options.cwd,
      env: { ...process.env, ...this.options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    const splitter = new LineSplitter(
      (line) => this.onLine(line),
      this.options.maxLineBytes,
      () => {
        // An oversized line is a hostile or broken engine: fail everything in flight on it.
        this.abandonAll(new UpstreamError('too-large', `engine wrote a line over ${this.options.maxLineBytes} bytes`));
      },
    );
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => splitter.push(chunk));
    const stderrSplitter = new LineSplitter((line) => this.options.onStderr?.(line), 64 * 1024);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => stderrSplitter.push(chunk));
    child.stdin.on('error', () => undefined); // EPIPE after the child died: handled by 'exit'
    child.once('exit', (code, signal) => {
      this.exited = true;
      this.failAll(new UpstreamError('crashed', `engine process exited (${signal ?? `code ${code}`})`));
      this.options.onExit?.(code, signal);
    });
    return new Promise((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => {
        this.exited = true;
        this.failAll(new UpstreamError('crashed', `cannot start engine: ${err.message}`));
        reject(new UpstreamError('transport', `cannot start engine: ${err.message}`));
      });
    });
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    if (!this.alive) return Promise.reject(new UpstreamError('crashed', 'engine process is not running'));
    if (options.signal?.aborted) return Promise.reject(new UpstreamError('aborted', 'call aborted before it was sent'));
    const id = this.nextId++;
    // A per-leg token routes this call's progress (and token-tagged logs, §17.1) back to it.
    const token = options.stream === true || options.onLog !== undefined ? nextProgressToken() : undefined;
    const outParams = token === undefined ? params : withProgressToken(params, token);
    return new Promise<JsonObject>((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.pending.delete(id);
        if (token !== undefined) this.byToken.delete(token);
      };
      const abandon = (err: UpstreamError): void => {
        if (!this.pending.has(id)) return;
        cleanup();
        // §7.14: tell the engine to stop; its late answer will be an unknown id and dropped.
        this.notify('notifications/cancel', { id, reason: err.reason });
        reject(err);
      };
      const onAbort = (): void => abandon(abortedCall(options.signal));
      this.pending.set(id, {
        resolve: (result) => {
          cleanup();
          resolve(result);
        },
        reject: (err) => {
          cleanup();
          reject(err);
        },
        token,
        onProgress: options.onProgress,
        onLog: options.onLog,
      });
      if (token !== undefined) this.byToken.set(token, id);
      const timer = setTimeout(() => abandon(new UpstreamError('timeout', `no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.write({ jsonrpc: '2.0', id, method, params: outParams });
    });
  }

  notify(method: string, params: JsonObject): void {
    if (this.alive) this.write({ jsonrpc: '2.0', method, params });
  }

  /** Close stdin (EOF = shutdown, §5.1), then kill if it does not exit in time. No zombies. */
  async close(graceMs = 2_000): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGTERM'), graceMs);
    const hard = setTimeout(() => child.kill('SIGKILL'), graceMs * 2);
    await exited;
    clearTimeout(timer);
    clearTimeout(hard);
  }

  /** Kill immediately (used when the process must not linger). */
  kill(): void {
    if (this.child && !this.exited) this.child.kill('SIGKILL');
  }

  private write(frame: JsonObject): void {
    const child = this.child;
    if (!child || this.exited || !child.stdin.writable) return;
    child.stdin.write(JSON.stringify(frame) + '\n');
  }

  private onLine(line: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      // §5.1: stdout carries protocol frames only. A broken frame (it starts like JSON) may have
      // been the answer to any call in flight, so none of them can be trusted to complete: fail
      // them all now (instead of letting each sit until its timeout) and ask the engine to stop
      // working on them. Plain text (a stray banner or debug print) is only dropped and logged.
      this.options.onStderr?.(`(non-JSON line on stdout dropped: ${line.slice(0, 120)})`);
      if (/^\s*[[{]/.test(line)) this.abandonAll(new UpstreamError('malformed', 'engine wrote a broken JSON frame on stdout (§5.1)'));
      return;
    }
    if (!isJsonObject(frame)) return;
    if (typeof frame.method === 'string') {
      this.onNotification(frame.method, isJsonObject(frame.params) ? frame.params : {});
      return;
    }
    if (typeof frame.id !== 'number') return; // not ours: our ids are numbers
    const pending = this.pending.get(frame.id);
    if (!pending) return; // unknown or abandoned id: dropped (§13.1)
    try {
      pending.resolve(settleResponse(frame, frame.id));
    } catch (err) {
      pending.reject(err instanceof UpstreamError ? err : new UpstreamError('malformed', 'bad answer'));
    }
  }

  private onNotification(method: string, params: JsonObject): void {
    const token =
      method === 'notifications/progress' ? params.progressToken : isJsonObject(params._meta) ? params._meta.progressToken : undefined;
    const id = typeof token === 'string' ? this.byToken.get(token) : undefined;
    const pending = id === undefined ? undefined : this.pending.get(id);
    if (method === 'notifications/progress') {
      pending?.onProgress?.(params); // unknown tokens are ignored (§9)
    } else if (method === 'notifications/log') {
      // §17.1 tags a request's log with its progressToken. An untagged log can only be about
      // the call in flight when there is exactly one; otherwise it is about the engine itself
      // and goes to the gateway's own log (never to a client whose request it may not concern).
      const owner = pending ?? (token === undefined && this.pending.size === 1 ? this.pending.values().next().value : undefined);
      if (owner?.onLog) owner.onLog(params);
      else this.options.onLog?.(params);
    }
  }

  private failAll(err: UpstreamError): void {
    for (const pending of [...this.pending.values()]) pending.reject(err);
  }

  /** Fail every call in flight on a live engine, telling it to stop each one (§7.14). */
  private abandonAll(err: UpstreamError): void {
    for (const id of [...this.pending.keys()]) this.notify('notifications/cancel', { id, reason: err.reason });
    this.failAll(err);
  }
}
