/**
 * Who may open the operator console. The console shows engine state and runs searches, so it is
 * an admin surface: by default it answers loopback peers only (the socket's address, never a
 * forwarded header, which any client can set), addressed by a loopback name (a page on another
 * site that points its own DNS name at 127.0.0.1 — DNS rebinding — sends its own Host), and not
 * fetched by another origin's page. "Another origin" includes a page on another port of
 * localhost, which browsers count as the same site (`Sec-Fetch-Site: same-site`): any local dev
 * server could otherwise make the operator's browser run searches. So only the console's own
 * page (`same-origin`), a navigation the operator typed (`none`), or a client that sends no
 * fetch metadata (curl) passes, and an `Origin` header must name this very host. A deployment
 * that needs the console remotely passes an authenticating guard instead.
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
  const host = c.req.header('host');
  return isLoopbackAddress(peer) && isLoopbackHost(host) && ownOrigin(c.req.header('sec-fetch-site'), c.req.header('origin'), host);
};

/** Fetch metadata of the console's own page, a typed navigation, or none at all; an Origin of this host only. */
export function ownOrigin(fetchSite: string | undefined, origin: string | undefined, host: string | undefined): boolean {
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') return false;
  return origin === undefined || origin === `http://${host}` || origin === `https://${host}`;
}
