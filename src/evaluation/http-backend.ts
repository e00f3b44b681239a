/**
 * One arm served by any RCP server over HTTP (§5.2): `POST <url>/initialize`, then one
 * `POST <url>/retrieve` per query, plain JSON-RPC. A server that issues a session token
 * (`initialize.result._meta.session`) gets it back in the `RCP-Session` header.
 */
import { fetch } from 'undici';
import { isJsonObject, type JsonObject } from '../core/protocol/jsonrpc.js';
import type { ArmAnswers, Backend, QueryBudget } from './backend.js';
import type { Query } from './trec.js';

export class HttpArm implements Backend {
  private nextId = 1;

  private constructor(
    private readonly name: string,
    private readonly url: string,
    private readonly headers: Record<string, string>,
  ) {}

  static async connect(name: string, url: string, timeoutMs: number): Promise<HttpArm> {
    const base = url.replace(/\/+$/, '');
    const arm = new HttpArm(name, base, { 'content-type': 'application/json' });
    const result = await arm.call(
      'initialize',
      { protocolVersion: 1, client: { name: 'rcp-gateway-eval', version: '0.1.0' }, capabilities: {} },
      AbortSignal.timeout(timeoutMs),
    );
    if (!isJsonObject(result.capabilities) || !isJsonObject(result.capabilities.retrieve)) {
      throw new Error(`${base}: the server does not advertise the retrieve capability`);
    }
    const session = isJsonObject(result._meta) ? result._meta.session : undefined;
    if (typeof session === 'string') arm.headers['rcp-session'] = session;
    return arm;
  }

  get arms(): string[] {
    return [this.name];
  }

  async answer(query: Query, k: number, budget: QueryBudget): Promise<ArmAnswers> {
    try {
      const result = await this.call('retrieve', { query: query.text, k, _meta: { deadlineMs: budget.deadlineMs } }, budget.signal);
      const hits = Array.isArray(result.hits) ? result.hits.filter(isJsonObject) : [];
      return new Map([[this.name, hits.map((hit) => ({ id: String(hit.id), score: typeof hit.score === 'number' ? hit.score : 0 }))]]);
    } catch (err) {
      return new Map([[this.name, err instanceof Error ? err : new Error(String(err))]]);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private async call(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject> {
    const id = this.nextId++;
    let response;
    try {
      response = await fetch(`${this.url}/${method}`, {
        method: 'POST',
        headers: this.headers,
        signal,
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      throw new Error(`cannot reach ${this.url}: ${cause ?? (err as Error).message}`);
    }
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${this.url}/${method}: HTTP ${response.status}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`${this.url}/${method}: the answer is not JSON`);
    }
    if (!isJsonObject(body)) throw new Error(`${this.url}/${method}: the answer is not a JSON-RPC response`);
    if (isJsonObject(body.error)) throw new Error(`${method} failed: ${String(body.error.code)} ${String(body.error.message)}`);
    if (!isJsonObject(body.result)) throw new Error(`${this.url}/${method}: the answer has no result`);
    return body.result;
  }
}
