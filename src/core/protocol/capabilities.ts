/**
 * Capability objects (§6). Presence ⇒ supported; values are metadata objects.
 */
import type { JsonObject } from './jsonrpc.js';

export type Capabilities = Record<string, JsonObject>;

export interface PeerInfo {
  name: string;
  version?: string;
}

export interface InitializeResult extends JsonObject {
  protocolVersion: number;
  server: PeerInfo;
  capabilities: Capabilities;
}

export const PROTOCOL_VERSION = 1;

export function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

export function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

export function finiteNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
