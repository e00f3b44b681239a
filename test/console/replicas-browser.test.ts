/**
 * Replicas and hedged reads in the operator console, in headless Chromium against a real gateway:
 * an engine whose `urls` are two test engines over HTTP shows one line per replica, by index and
 * never by address; when one replica is killed under traffic its line turns `ejected` while the
 * engine's row stays ready; the hedged reads' counts are shown once the engine has hedged.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'puppeteer-core';
import { rpc } from '../support/http-client.js';
import { startGateway, startHttpEngine, type EngineHandle, type GatewayHandle } from '../support/processes.js';
import { artifactsDir, chromiumPath } from './support.js';

const CHROMIUM = chromiumPath();

let engines: EngineHandle[] = [];
let gateway: GatewayHandle;
let browser: Browser;
let page: Page;

/** Send reads through the gateway until `check` holds (the console samples once a second). */
async function driveUntil(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await rpc(gateway.url, 'retrieve', { query: 'boundary layer', k: 3 }, { validate: false });
  }
}

const replicaLines = (): Promise<Array<{ replica: string | null; state: string | null; text: string }>> =>
  page.$$eval('tr[data-engine="mirrored"] .replica', (lines) =>
    lines.map((line) => ({
      replica: line.getAttribute('data-replica'),
      state: line.getAttribute('data-state'),
      text: line.textContent ?? '',
    })),
  );

describe.skipIf(!CHROMIUM)('replicas in the operator console, headless Chromium (needs Debian chromium)', () => {
  beforeAll(async () => {
    const { default: puppeteer } = await import('puppeteer-core');
    engines = await Promise.all([0, 1].map((i) => startHttpEngine(['--id', `mirror-${i}`, '--id-prefix', 'm-', '--delay-ms', '0'])));
    gateway = await startGateway({
      config: {
        engines: [
          {
            id: 'mirrored',
            transport: 'http',
            urls: engines.map((engine) => engine.url),
            required: false,
            // Every read may hedge after 1 ms: the budget alone decides, so hedges are sent or refused.
            hedge: { delayMs: 1, budget: 0.5 },
          },
        ],
        gateway: { console: { enabled: true }, deadlineMs: 5_000 },
      },
    });
    browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(gateway.url.replace(/\/rcp$/, '/console'), { waitUntil: 'domcontentloaded' });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await Promise.all(engines.map((engine) => engine.stop()));
  });

  it('shows one line per replica, by index, and no address', async () => {
    await page.waitForSelector('tr[data-engine="mirrored"][data-status="ready"] .replica[data-replica="1"]', { timeout: 30_000 });
    const lines = await replicaLines();
    expect(lines.map((line) => [line.replica, line.state])).toEqual([
      ['0', 'up'],
      ['1', 'up'],
    ]);
    const row = await page.$eval('tr[data-engine="mirrored"]', (tr) => tr.textContent ?? '');
    for (const engine of engines) expect(row).not.toContain(String(engine.port));
    expect(row).not.toContain('127.0.0.1');
  });

  it('shows the hedged reads once the engine hedges', async () => {
    await driveUntil('a hedges line', async () => (await page.$('tr[data-engine="mirrored"] .hedges')) !== null);
    const text = await page.$eval('tr[data-engine="mirrored"] .hedges', (div) => div.textContent ?? '');
    expect(text).toMatch(/^hedges \d+ sent · \d+ won · \d+ lost · \d+ over budget · \d+ at the cap/);
  });

  it('shows a killed replica ejected while the engine stays ready', async () => {
    await engines[1]!.stop();
    await driveUntil('replica 1 ejected', async () => (await replicaLines()).some((l) => l.replica === '1' && l.state === 'ejected'));
    const lines = await replicaLines();
    expect(lines.find((line) => line.replica === '0')?.state).toBe('up');
    expect(lines.find((line) => line.replica === '1')?.text).toMatch(/ejection/);
    expect(await page.$('tr[data-engine="mirrored"][data-status="ready"]')).not.toBeNull();
    await page.screenshot({ path: path.join(artifactsDir(), 'console-replicas.png'), fullPage: true });
  }, 60_000);
});
