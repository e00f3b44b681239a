/**
 * Who may open the operator console. The console shows engine state and runs searches, so it is
 * an admin surface: by default it answers loopback peers only (the socket's address, never a
 * forwarded header, which any client can set), addressed by a loopback name (a page on another
 * site that points its own DNS name at 127.0.0.1 — DNS rebinding — sends its own Host), and not
 * fetched cross-site (another site's page making the operator's browser run searches). A
 * deployment that needs the console remotely passes an authenticating guard instead.
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

/** A Host header naming this machine by loopback: `localhost`, 127.x.y.z or [::1], any port. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
  return name.toLowerCase() === 'localhost' || name === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(name);
}

export const loopbackOnly: ConsoleGuard = (c) => {
  let peer: string | undefined;
  try {
    peer = getConnInfo(c).remote.address;
  } catch {
    return false; // not a node socket (app.fetch called directly): no peer to vouch for
  }
  return isLoopbackAddress(peer) && isLoopbackHost(c.req.header('host')) && c.req.header('sec-fetch-site') !== 'cross-site';
};
