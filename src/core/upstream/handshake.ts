/**
 * The initialize handshake with an engine (§6): offer our protocol version and the frames we
 * can take (`streaming`, `log`), and read back its identity and capabilities. An answer without
 * a usable `protocolVersion` is malformed; a missing or odd `server` falls back to the engine id.
 */
import { PROTOCOL_VERSION, type Capabilities, type PeerInfo } from '../protocol/capabilities.js';
import { isJsonObject } from '../protocol/jsonrpc.js';
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
}

export async function handshake(transport: UpstreamTransport, options: HandshakeOptions): Promise<Handshake> {
  const result = await transport.call(
    'initialize',
    {
      protocolVersion: PROTOCOL_VERSION,
      client:
        options.clientVersion === undefined ? { name: options.clientName } : { name: options.clientName, version: options.clientVersion },
      capabilities: { streaming: {}, log: {} },
    },
    { timeoutMs: options.timeoutMs, maxResponseBytes: options.maxResponseBytes },
  );
  const version = result.protocolVersion;
  if (typeof version !== 'number' || version < 1) throw new UpstreamError('malformed', 'initialize returned no usable protocolVersion');
  const server =
    isJsonObject(result.server) && typeof result.server.name === 'string'
      ? { name: result.server.name, ...(typeof result.server.version === 'string' ? { version: result.server.version } : {}) }
      : { name: options.engineId };
  const capabilities: Capabilities = {};
  if (isJsonObject(result.capabilities)) {
    for (const [key, value] of Object.entries(result.capabilities)) {
      if (isJsonObject(value)) capabilities[key] = value;
    }
  }
  return { server, capabilities };
}
