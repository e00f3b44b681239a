/**
 * Helpers for the security suites: a scriptable hostile engine served over HTTP from the test
 * process (it records every request path and can answer anything), raw HTTP requests that the
 * test controls byte by byte, and a gateway process over such engines.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startGateway, type GatewayHandle } from '../support/processes.js';

export type Json = Record<string, unknown>;

/** What the hostile engine answers for one call: a result, or the raw HTTP reply to send. */
export type EngineAnswer =
  | Json
  | { raw: { status?: number; contentType?: string; body: string | Buffer } }
  /** A 200 JSON body sent in two parts: `head` at once, the rest once `tail` resolves. */
  | { stream: { head: string; tail: Promise<string> } };

export interface EngineCall {
  id: unknown;
  path: string;
  method: string;
  params: Json;
  headers: http.IncomingHttpHeaders;
}

export interface HostileEngine {
  url: string;
  calls: EngineCall[];
  /** Calls of `method`, lifecycle calls left out by default. */
  callsOf(method: string): EngineCall[];
  close(): Promise<void>;
}

const DEFAULT_CAPS: Json = { retrieve: { maxK: 100, modes: ['sparse'] }, index: {}, 'x-acme': {} };

/**
 * An engine over HTTP: `initialize`/`info`/`ping` are answered from `caps`, every other call by
 * `answer` (default: no hits). Calls are recorded before they are answered.
 */
export async function hostileEngine(
  answer: (call: EngineCall) => EngineAnswer | Promise<EngineAnswer> = () => ({ hits: [] }),
  caps: Json = DEFAULT_CAPS,
): Promise<HostileEngine> {
  const calls: EngineCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        let message: Json = {};
        try {
          message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
        } catch {
          /* recorded with empty params */
        }
        const method = typeof message.method === 'string' ? message.method : '';
        const call: EngineCall = {
          id: message.id,
          path: req.url ?? '',
          method,
          params: (message.params ?? {}) as Json,
          headers: req.headers,
        };
        calls.push(call);
        if (message.id === undefined) return void res.writeHead(204).end();
        const lifecycle: Json | undefined =
          method === 'initialize' || method === 'info'
            ? { protocolVersion: 1, server: { name: 'hostile', version: '1' }, capabilities: caps }
            : method === 'ping'
              ? {}
              : undefined;
        const out = lifecycle ?? (await answer(call));
        if ('stream' in out && typeof out.stream === 'object' && out.stream !== null) {
          const { head, tail } = out.stream as { head: string; tail: Promise<string> };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(head);
          res.on('error', () => undefined);
          return void res.end(await tail);
        }
        if ('raw' in out && typeof out.raw === 'object' && out.raw !== null) {
          const raw = out.raw as { status?: number; contentType?: string; body: string | Buffer };
          res.writeHead(raw.status ?? 200, { 'content-type': raw.contentType ?? 'application/json' });
          return void res.end(raw.body);
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: out }));
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/rcp`,
    calls,
    callsOf: (method) => calls.filter((c) => c.method === method),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json(): unknown;
}

/** One HTTP request exactly as given (path not normalised, any body and content type). */
export function rawRequest(
  base: string,
  options: { path?: string; method?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? 'POST',
        path: options.path ?? url.pathname,
        headers: { 'content-type': 'application/json', ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) as unknown });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** POST one JSON-RPC message (or batch) to the base path. */
export function post(base: string, message: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest(base, { body: JSON.stringify(message), headers });
}

/** A connection that sent its headers and a first body byte, and then says nothing more. */
export function stalledBody(base: string): Promise<net.Socket> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
        () => resolve(socket),
      );
    });
    socket.on('error', () => undefined); // the gateway may cut it; that is the point
    socket.once('error', reject);
  });
}

/** Everything a socket receives until it closes. */
export function untilClosed(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.once('close', () => resolve(text));
  });
}

/** A gateway over the given engine URLs (ids e0, e1, …) with `gateway` settings. */
export function gatewayOver(urls: string[], gateway: Json = {}, engineExtras: Json[] = []): Promise<GatewayHandle> {
  return startGateway({
    config: {
      engines: urls.map((url, i) => ({ id: `e${i}`, transport: 'http', url, ...engineExtras[i] })),
      gateway: { logLevel: 'info', ...gateway },
    },
  });
}

export const retrieveMessage = (id: number | string, params: Json = { query: 'flow', k: 5 }): Json => ({
  jsonrpc: '2.0',
  id,
  method: 'retrieve',
  params,
});
