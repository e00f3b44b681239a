/**
 * The initialize handshake with an engine (§6): offer our protocol version and the frames we
 * can take (`streaming`, `log`), and read back its identity and capabilities. An answer without
 * a usable `protocolVersion` is malformed; a missing or odd `server` falls back to the engine id.
 *
 * An engine that keeps one session per process (the reference SDK HTTP servers do) answers a
 * second `initialize` — from a restarted gateway, a second `--workers` process, another replica —
 * with -32600, as §13 requires of a session already initialized. That session is up, so the
 * engine is usable: its capability set is then read with `info` (§7.2: "same shape as
 * `initialize.result`", and §13.2: the same set as the session's `initialize`).
 */
import { PROTOCOL_VERSION, type Capabilities, type PeerInfo } from '../protocol/capabilities.js';
import { ErrorCode } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from './errors.js';
import type { UpstreamTransport } from './transport.js';

export interface HandshakeOptions {
  /** The gateway's name, as the client it presents to the engine. */
  clientName: string;
  /** The gateway's version (read once from package.json at the composition root); omitted when unknown (§7.1 makes it optional). */
  clientVersion?: string;
  /** The engine id: its name when it does not give one. */
  engineId: string;
  timeoutMs: number;
  maxResponseBytes: number;
}

export interface Handshake {
  server: PeerInfo;
  capabilities: Capabilities;
  /** `info` when the engine refused a second `initialize` (-32600) and `info` gave the set. */
  via: 'initialize' | 'info';
}

export async function handshake(transport: UpstreamTransport, options: HandshakeOptions): Promise<Handshake> {
  let result: JsonObject;
  let via: Handshake['via'] = 'initialize';
  try {
    result = await initialize(transport, options);
  } catch (err) {
    if (!(err instanceof UpstreamError && err.reason === 'remote-error' && err.remote?.code === ErrorCode.InvalidRequest)) throw err;
    result = await transport.call('info', {}, { timeoutMs: options.timeoutMs, maxResponseBytes: options.maxResponseBytes });
    via = 'info';
  }
  return { ...parseInitializeResult(result, options.engineId, via), via };
}

function initialize(transport: UpstreamTransport, options: HandshakeOptions): Promise<JsonObject> {
  return transport.call(
    'initialize',
    {
      protocolVersion: PROTOCOL_VERSION,
      client:
        options.clientVersion === undefined ? { name: options.clientName } : { name: options.clientName, version: options.clientVersion },
      capabilities: { streaming: {}, log: {} },
    },
    { timeoutMs: options.timeoutMs, maxResponseBytes: options.maxResponseBytes },
  );
}

/** The `initialize` (or `info`) result: identity and capabilities; no usable `protocolVersion` is malformed. */
function parseInitializeResult(result: JsonObject, engineId: string, via: Handshake['via']): Omit<Handshake, 'via'> {
  const version = result.protocolVersion;
  if (typeof version !== 'number' || version < 1) throw new UpstreamError('malformed', `${via} returned no usable protocolVersion`);
  const server =
    isJsonObject(result.server) && typeof result.server.name === 'string'
      ? { name: result.server.name, ...(typeof result.server.version === 'string' ? { version: result.server.version } : {}) }
      : { name: engineId };
  const capabilities: Capabilities = {};
  if (isJsonObject(result.capabilities)) {
    for (const [key, value] of Object.entries(result.capabilities)) {
      if (isJsonObject(value)) capabilities[key] = value;
    }
  }
  return { server, capabilities };
}
