/** The console guard's address and host checks (the guard itself is exercised over HTTP in http.test.ts). */
import { describe, expect, it } from 'vitest';
import { isLoopbackAddress, isLoopbackHost, ownOrigin } from '../../src/node/console/guard.js';

describe('console guard', () => {
  it('takes 127.0.0.0/8, ::1 and mapped IPv4 loopback as loopback peers, nothing else', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(address)).toBe(true);
    for (const address of ['10.0.0.1', '::ffff:10.0.0.1', '128.0.0.1', '::2', undefined]) expect(isLoopbackAddress(address)).toBe(false);
  });

  it('takes localhost, 127.x and [::1] hosts with or without a port, nothing else', () => {
    for (const host of ['localhost', 'LOCALHOST:8787', '127.0.0.1:8787', '127.1.2.3', '[::1]:8787', '[::1]'])
      expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['localhost.example', '127.0.0.1.nip.io', 'example.com:8787', '[::2]:80', '', undefined])
      expect(isLoopbackHost(host)).toBe(false);
  });

  it("takes the console's own page, a typed navigation or no fetch metadata; never another origin, another localhost port included", () => {
    const host = '127.0.0.1:8787';
    for (const [site, origin] of [
      ['same-origin', undefined],
      ['same-origin', 'http://127.0.0.1:8787'],
      ['none', undefined],
      [undefined, undefined],
    ] as const)
      expect(ownOrigin(site, origin, host)).toBe(true);
    for (const [site, origin] of [
      ['same-site', undefined], // a page on localhost:3000: the same site to a browser
      ['same-site', 'http://127.0.0.1:3000'],
      ['cross-site', undefined],
      [undefined, 'http://evil.example'],
      [undefined, 'http://127.0.0.1:3000'],
      ['same-origin', 'null'],
    ] as const)
      expect(ownOrigin(site, origin, host)).toBe(false);
  });
});
