/**
 * Who may open the operator console. The console shows engine state and runs searches, so it is
 * an admin surface: by default it answers loopback peers only (the socket's address, never a
 * forwarded header, which any client can set). A deployment that needs it remotely puts an
 * authenticating guard here instead.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import type { NodeHttpEnv } from '../server/node-request-io.js';

export type ConsoleGuard = (c: Context<NodeHttpEnv>) => boolean;

/** 127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

export const loopbackOnly: ConsoleGuard = (c) => {
  try {
    return isLoopbackAddress(getConnInfo(c).remote.address);
  } catch {
    return false; // not a node socket (app.fetch called directly): no peer to vouch for
  }
};
