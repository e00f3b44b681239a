/**
 * §15.1: an HTTP server SHOULD bind to loopback unless fronted by authenticated, encrypted
 * transport. With auth off the gateway refuses to listen on any other address unless the
 * operator says it is fronted (`gateway.auth.allowUnauthenticated`): one open gateway in front
 * of many engines hands every engine's data, and every engine's configured credentials, to
 * whoever can reach the port, so the unsafe choice is the one that has to be written down.
 */
import type { AuthSettings } from './config.js';

/** Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost). Wildcards and names are not. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  const v4 = bare.startsWith('::ffff:') ? bare.slice('::ffff:'.length) : bare;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** Why the gateway must not listen on `host`, or undefined when it may. */
export function unsafeBindReason(host: string, auth: AuthSettings): string | undefined {
  if (auth.enabled || auth.allowUnauthenticated || isLoopbackHost(host)) return undefined;
  return (
    `refusing to serve on ${host} with client authentication off (spec §15.1: loopback unless fronted). ` +
    'Turn on gateway.auth, or set gateway.auth.allowUnauthenticated (or pass --allow-unauthenticated) when an authenticating proxy fronts the gateway.'
  );
}
