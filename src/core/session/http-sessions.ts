/**
 * Optional stateful HTTP sessions (§5.2 "a stateful HTTP server MAY issue a session token in
 * `initialize.result._meta.session`"). Their one job here is cancellation over HTTP: a client that
 * sends its token back as `RCP-Session` may POST `notifications/cancel` (§7.14) for the ids of its
 * own in-flight requests. The registry maps token → {request id → the Session answering it}.
 *
 * Bounded on every axis: sessions expire after an idle TTL and are capped in number (least
 * recently used forgotten first); ids are tracked only while their request is in flight, at most
 * `maxInFlightPerSession` per session. Replica-local by design: nothing is shared between
 * gateway replicas, so a cancel must reach the replica that holds the request.
 */
import { classify, type RequestId } from '../protocol/jsonrpc.js';
import type { Session } from './session.js';

export const SESSION_HEADER = 'rcp-session';

export interface HttpSessionSettings {
  ttlMs: number;
  maxSessions: number;
  maxInFlightPerSession: number;
}

interface Entry {
  lastUsed: number;
  requests: Map<RequestId, Session>;
}

export interface Tracked {
  /** Ids already in flight in this session (§4.7: ids are unique among in-flight requests). */
  duplicates: RequestId[];
  /** Stop tracking these ids (call once the request has been answered). */
  release: () => void;
}

const NOTHING_TRACKED: Tracked = { duplicates: [], release: () => undefined };

export class HttpSessionRegistry {
  /** Map order is least-recently-used first: a touch re-inserts the entry at the end. */
  private readonly sessions = new Map<string, Entry>();

  constructor(
    private readonly settings: HttpSessionSettings,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Issue a fresh token (returned by `initialize` as `_meta.session`). */
  open(): string {
    this.sweep();
    while (this.sessions.size >= this.settings.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const token = newToken();
    this.sessions.set(token, { lastUsed: this.now(), requests: new Map() });
    return token;
  }

  /** Whether `token` names a live session (touching it). */
  has(token: string): boolean {
    return this.live(token) !== undefined;
  }

  /**
   * Track the request ids of one HTTP request under `token` while it runs. Unknown or expired
   * tokens track nothing: the request is still served, statelessly, just not cancellable by id.
   */
  track(token: string, ids: readonly RequestId[], session: Session): Tracked {
    const entry = this.live(token);
    if (!entry || ids.length === 0) return NOTHING_TRACKED;
    const duplicates: RequestId[] = [];
    const mine: RequestId[] = [];
    for (const id of ids) {
      if (entry.requests.has(id)) duplicates.push(id);
      else if (entry.requests.size < this.settings.maxInFlightPerSession) {
        entry.requests.set(id, session);
        mine.push(id);
      }
    }
    let released = false;
    return {
      duplicates,
      release: () => {
        if (released) return;
        released = true;
        for (const id of mine) if (entry.requests.get(id) === session) entry.requests.delete(id);
        entry.lastUsed = this.now();
      },
    };
  }

  /** §7.14: cancel `id` in `token`'s session; unknown tokens, unknown and finished ids are a no-op. */
  cancel(token: string, id: RequestId): boolean {
    const session = this.live(token)?.requests.get(id);
    return session !== undefined && session.cancel(id);
  }

  private live(token: string): Entry | undefined {
    this.sweep();
    const entry = this.sessions.get(token);
    if (!entry) return undefined;
    entry.lastUsed = this.now();
    this.sessions.delete(token);
    this.sessions.set(token, entry);
    return entry;
  }

  /** Drop idle sessions from the old end; a session with requests in flight is never idle. */
  private sweep(): void {
    const cutoff = this.now() - this.settings.ttlMs;
    for (const [token, entry] of this.sessions) {
      if (entry.lastUsed > cutoff) break;
      if (entry.requests.size > 0) continue;
      this.sessions.delete(token);
    }
  }
}

/** Ids of the requests in a decoded body (single message or §11 batch). */
export function requestIdsOf(value: unknown): RequestId[] {
  const ids: RequestId[] = [];
  for (const member of Array.isArray(value) ? value : [value]) {
    const classified = classify(member);
    if (classified.kind === 'request') ids.push(classified.message.id);
  }
  return ids;
}

/** Ids named by the `notifications/cancel` messages in a decoded body. */
export function cancelIdsOf(value: unknown): RequestId[] {
  const ids: RequestId[] = [];
  for (const member of Array.isArray(value) ? value : [value]) {
    const classified = classify(member);
    if (classified.kind !== 'notification' || classified.message.method !== 'notifications/cancel') continue;
    const id = classified.message.params.id;
    if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))) ids.push(id);
  }
  return ids;
}

/** 144 random bits, base64url: unguessable, so one client cannot cancel another's requests. */
function newToken(): string {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_');
}
