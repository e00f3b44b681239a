/**
 * NDJSON stdio client for tests (spec §5.1). Spawns a server, correlates
 * responses by id, collects notifications, and checks that stdout carries
 * nothing but JSON-RPC frames (every frame goes to the spec validator).
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { recordEmitted, recordViolation } from './spec-validator.js';
import { trackChild } from './processes.js';
import type { JsonRpcResponse, RequestId } from './http-client.js';

export type Frame = Record<string, unknown>;
export interface StdioClientOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Record frames/violations with the global spec-validator collector (default true). */
  validate?: boolean;
}
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}
interface Pending {
  method: string;
  resolve(r: JsonRpcResponse): void;
  reject(e: Error): void;
}
interface Waiter {
  predicate(f: Frame): boolean;
  resolve(f: Frame): void;
}

const isRecord = (v: unknown): v is Frame => v !== null && typeof v === 'object' && !Array.isArray(v);
const keyOf = (id: unknown): string => JSON.stringify(id);

export class StdioClient {
  readonly proc: ChildProcessWithoutNullStreams;
  /** Every JSON frame read from stdout, in order (batch arrays are kept whole). */
  readonly frames: unknown[] = [];
  /** Every JSON-RPC message object read from stdout (batch members flattened). */
  readonly messages: Frame[] = [];
  /** Every notification (frame with `method` and no `id`). */
  readonly notifications: Frame[] = [];
  /** Protocol violations seen on stdout (non-JSON lines, unanswerable ids...). */
  readonly violations: string[] = [];
  /** Resolves when the child exits. */
  readonly exited: Promise<ExitInfo>;
  exitInfo: ExitInfo | undefined;

  private readonly validate: boolean;
  private readonly pending = new Map<string, Pending>();
  private readonly sent = new Set<string>();
  private readonly answered = new Set<string>();
  private waiters: Waiter[] = [];
  private stdoutBuf = '';
  private stdinBuf = '';
  private stderrText = '';
  private nextId = 1;

  constructor(command: string[], opts: StdioClientOptions = {}) {
    const [cmd, ...args] = command;
    if (!cmd) throw new Error('StdioClient: empty command');
    this.validate = opts.validate !== false;
    this.proc = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    trackChild(this.proc);
    this.proc.stdout.setEncoding('utf8');
    this.proc.stderr.setEncoding('utf8');
    this.proc.stdout.on('data', (chunk: string) => this.onStdout(chunk));
    this.proc.stderr.on('data', (chunk: string) => {
      this.stderrText += chunk;
    });
    this.proc.stdin.on('error', () => {
      /* EPIPE after the child died: surfaced via `exited` */
    });
    this.exited = new Promise((resolve) => {
      // 'close' (not 'exit'): fires after stdout/stderr are drained, so every frame is seen first.
      this.proc.on('close', (code, signal) => {
        this.exitInfo = { code, signal };
        if (this.stdoutBuf.trim() !== '') this.violation(`stdout ended with an unterminated line: ${this.stdoutBuf.slice(0, 200)}`);
        for (const [k, p] of this.pending)
          p.reject(new Error(`process exited (code ${code}, signal ${signal}) before answering ${p.method} id ${k}`));
        this.pending.clear();
        resolve({ code, signal });
      });
    });
  }

  /** Everything the child wrote to stderr so far. */
  get stderr(): string {
    return this.stderrText;
  }

  /** Send a request; resolves with the response bearing its id. */
  request<R = Record<string, unknown>>(method: string, params: unknown = {}, id?: RequestId): Promise<JsonRpcResponse<R>> {
    const rid = id ?? this.nextId++;
    const p = new Promise<JsonRpcResponse<R>>((resolve, reject) => {
      if (this.exitInfo) return reject(new Error(`process already exited; cannot send ${method}`));
      this.pending.set(keyOf(rid), { method, resolve: resolve as (r: JsonRpcResponse) => void, reject });
    });
    this.send({ jsonrpc: '2.0', id: rid, method, params });
    return p;
  }

  /** Send a notification (no id, no answer). */
  notify(method: string, params: unknown = {}): void {
    this.send({ jsonrpc: '2.0', method, params });
  }

  /** Write one frame as an NDJSON line (no correlation). */
  send(frame: unknown): void {
    this.writeRaw(JSON.stringify(frame) + '\n');
  }

  /** Write raw bytes to stdin (for split-read / garbage tests); ids in complete lines are noted as sent. */
  writeRaw(text: string): void {
    this.stdinBuf += text;
    const lines = this.stdinBuf.split('\n');
    this.stdinBuf = lines.pop() ?? '';
    for (const line of lines) {
      let frame: unknown;
      try {
        frame = JSON.parse(line);
      } catch {
        continue;
      }
      for (const m of Array.isArray(frame) ? frame : [frame]) {
        if (isRecord(m) && 'id' in m) {
          this.sent.add(keyOf(m.id));
          this.answered.delete(keyOf(m.id));
        }
      }
    }
    if (!this.proc.stdin.destroyed) this.proc.stdin.write(text);
  }

  /** Progress notification params seen for a token. */
  progressFor(token: string | number): Frame[] {
    return this.notifications
      .filter((n) => n.method === 'notifications/progress' && isRecord(n.params) && n.params.progressToken === token)
      .map((n) => n.params as Frame);
  }

  /** `notifications/log` params seen so far. */
  logs(): Frame[] {
    return this.notifications.filter((n) => n.method === 'notifications/log').map((n) => n.params as Frame);
  }

  /** Resolve with the first frame (past or future) matching `predicate`. */
  waitFor(predicate: (frame: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    const seen = this.messages.find((f) => predicate(f));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`StdioClient.waitFor timed out after ${timeoutMs} ms; stderr:\n${this.stderrText.slice(-2000)}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Resolve once stderr matches `re`; returns the match. */
  async waitForStderr(re: RegExp, timeoutMs = 10_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.stderrText.match(re);
      if (m) return m;
      if (Date.now() > deadline) throw new Error(`stderr never matched ${re}; got:\n${this.stderrText.slice(-2000)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 50);
        this.proc.stderr.once('data', () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** End stdin (EOF ≡ shutdown, §5.1) and wait for exit; SIGKILL after `timeoutMs`. */
  async close(timeoutMs = 5_000): Promise<number | null> {
    this.proc.stdin.end();
    const t = setTimeout(() => this.kill(), timeoutMs);
    const info = await this.exited;
    clearTimeout(t);
    return info.code;
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (!this.exitInfo) this.proc.kill(signal);
  }

  private violation(msg: string): void {
    this.violations.push(msg);
    if (this.validate) recordViolation(`stdio: ${msg}`);
  }

  private onStdout(chunk: string): void {
    this.stdoutBuf += chunk;
    let nl: number;
    while ((nl = this.stdoutBuf.indexOf('\n')) >= 0) {
      const line = this.stdoutBuf.slice(0, nl);
      this.stdoutBuf = this.stdoutBuf.slice(nl + 1);
      if (line.trim() === '') continue;
      let frame: unknown;
      try {
        frame = JSON.parse(line);
      } catch {
        this.violation(`non-JSON line on stdout (stdout must be protocol-only): ${line.slice(0, 200)}`);
        continue;
      }
      this.onFrame(frame);
    }
  }

  private onFrame(frame: unknown): void {
    this.frames.push(frame);
    const members = Array.isArray(frame) ? frame : [frame];
    if (this.validate) {
      const single = members.length === 1 && !Array.isArray(frame) ? members[0] : undefined;
      const method = isRecord(single) ? this.pending.get(keyOf(single.id))?.method : undefined;
      recordEmitted(frame, method);
      // Batch members whose method we know get the result-shape check too.
      if (Array.isArray(frame))
        for (const m of members)
          if (isRecord(m)) {
            const mm = this.pending.get(keyOf(m.id))?.method;
            if (mm && 'result' in m) recordEmitted(m, mm);
          }
    }
    for (const m of members) {
      if (!isRecord(m)) continue;
      this.messages.push(m);
      if (typeof m.method === 'string' && !('id' in m)) this.notifications.push(m);
      else if ('id' in m && ('result' in m || 'error' in m)) {
        const k = keyOf(m.id);
        if (m.id !== null && !this.sent.has(k)) this.violation(`response bears an id that was never sent: ${k}`);
        else if (this.answered.has(k)) this.violation(`second response for id ${k} (must be answered exactly once)`);
        if (m.id !== null) this.answered.add(k);
        const p = this.pending.get(k);
        if (p) {
          this.pending.delete(k);
          p.resolve(m as JsonRpcResponse);
        }
      }
      for (const w of [...this.waiters]) {
        if (w.predicate(m)) {
          this.waiters = this.waiters.filter((x) => x !== w);
          w.resolve(m);
        }
      }
    }
  }
}
