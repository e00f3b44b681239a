/**
 * Split experiments through real gateway processes over the bundled demo engines: the shares of
 * 10,000 distinct assignment keys land within ±2 points of the configured ones, and a second,
 * separately started gateway process assigns every key the same arm (no shared state).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type GatewayHandle } from '../support/processes.js';
import { batches, demoEngines, everyEngineReady, xrcpgw, type Call } from './support.js';

const KEYS = 10_000;
const config = {
  engines: demoEngines(),
  gateway: {
    logLevel: 'warn',
    experiments: {
      arms: { 'titles-only': { engines: ['titles'] }, 'abstracts-only': { engines: ['abstracts'] } },
      // Half of the keys enter; of those a quarter get titles-only, three quarters abstracts-only.
      list: [
        { id: 'views', kind: 'split', traffic: 0.5, arms: { 'titles-only': 1, 'abstracts-only': 3 }, assignBy: { param: 'sessionId' } },
      ],
    },
  },
};

let first: GatewayHandle;
let second: GatewayHandle;
beforeAll(async () => {
  [first, second] = await Promise.all([startGateway({ config }), startGateway({ config })]);
  await Promise.all([everyEngineReady(first.url), everyEngineReady(second.url)]);
}, 330_000);
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
});

/** The arm each key is served by ('' = outside the experiment). */
async function armsOf(url: string): Promise<string[]> {
  const calls: Call[] = Array.from({ length: KEYS }, (_, i) => ({
    method: 'retrieve',
    params: { query: 'shock wave', k: 1, sessionId: `user-${i}` },
  }));
  const replies = await batches(url, calls, 100, 2);
  return replies.map((reply) => {
    if (reply.error) throw new Error(`retrieve failed: ${reply.error.message}`);
    return String(xrcpgw(reply).arm ?? '');
  });
}

describe('split experiment across gateway processes', () => {
  it('assigns 10,000 keys within ±2 points of the configured shares, identically in two processes', async () => {
    const arms = await armsOf(first.url);
    const share = (arm: string): number => arms.filter((a) => a === arm).length / KEYS;
    console.log(
      `split over ${KEYS} keys: outside ${share('')}, titles-only ${share('titles-only')}, abstracts-only ${share('abstracts-only')}`,
    );
    expect(Math.abs(share('') - 0.5)).toBeLessThanOrEqual(0.02);
    expect(Math.abs(share('titles-only') - 0.125)).toBeLessThanOrEqual(0.02);
    expect(Math.abs(share('abstracts-only') - 0.375)).toBeLessThanOrEqual(0.02);
    expect(await armsOf(second.url)).toEqual(arms);
  }, 240_000);
});
