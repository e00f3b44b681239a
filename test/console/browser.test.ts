/**
 * The operator console in a real browser: headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core) against a real gateway with real engines. It sees every engine row, sees the
 * HTTP engine's breaker open once that engine is killed and close after it is back, runs a search
 * and finds the lineage of the top hit, and checks that nothing the page received carries the
 * engine credential. Screenshots go to test/console/artifacts/ (git-ignored).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, HTTPResponse, Page } from 'puppeteer-core';
import { rpc } from '../support/http-client.js';
import { artifactsDir, chromiumPath, ENGINE_SECRET, startConsoleFixture, type ConsoleFixture } from './support.js';

const CHROMIUM = chromiumPath();
const ENGINES = ['titles', 'abstracts', 'flaky'];

let fixture: ConsoleFixture;
let browser: Browser;
let page: Page;
/** Every body the page fetched from the console (streams: each event's data, recorded in the page). */
const bodies: string[] = [];
const pending: Array<Promise<void>> = [];

/**
 * Record the data of every Server-Sent Event the page's EventSources receive (page script: the
 * test's TypeScript has no DOM types, so it is given as text).
 */
const RECORD_EVENT_STREAMS = `
  window.__received = [];
  const Original = window.EventSource;
  window.EventSource = class extends Original {
    constructor(url, init) {
      super(url, init);
      for (const type of ['history', 'state', 'start', 'progress', 'result', 'failure']) {
        this.addEventListener(type, (event) => window.__received.push(event.data));
      }
    }
  };
`;

function recordBody(response: HTTPResponse): void {
  const type = response.headers()['content-type'] ?? '';
  if (!response.url().includes('/console') || type.startsWith('text/event-stream')) return;
  pending.push(
    response.text().then(
      (text) => void bodies.push(text),
      () => undefined,
    ),
  );
}

/** Send retrieves through the gateway (traffic the breaker can judge) until `check` holds. */
async function driveUntil(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await rpc(
      fixture.gateway.url,
      'retrieve',
      { query: 'boundary layer', k: 3, _meta: { 'x-rcpgw': { engines: ['flaky', 'titles'] } } },
      { validate: false },
    );
  }
}

const breakerShown = async (state: string): Promise<boolean> => (await page.$(`tr[data-engine="flaky"][data-breaker="${state}"]`)) !== null;

describe.skipIf(!CHROMIUM)('operator console in headless Chromium (needs Debian chromium)', () => {
  beforeAll(async () => {
    const { default: puppeteer } = await import('puppeteer-core');
    fixture = await startConsoleFixture();
    browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    await page.evaluateOnNewDocument(RECORD_EVENT_STREAMS);
    page.on('response', recordBody);
    await page.goto(fixture.consoleUrl, { waitUntil: 'domcontentloaded' });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await fixture?.stop();
  });

  it('shows a row for every engine, each ready with a closed breaker', async () => {
    const selector = ENGINES.map((id) => `tr[data-engine="${id}"][data-status="ready"]`);
    await page.waitForFunction(`${JSON.stringify(selector)}.every((s) => document.querySelector(s))`, { timeout: 30_000 });
    const rows = await page.$$eval('#engines tbody tr', (trs) =>
      trs.map((tr) => [tr.getAttribute('data-engine'), tr.getAttribute('data-breaker')]),
    );
    expect(rows.sort()).toEqual(ENGINES.map((id) => [id, 'closed']).sort());
    expect(await page.$eval('#live', (el) => el.textContent)).toBe('live');
    // This gateway advertises no experiments read-out: the panel says so instead of failing.
    expect(await page.$eval('#experiments', (el) => el.textContent?.trim())).toBe('no experiments');
  });

  it('shows the breaker open when the HTTP engine is killed, and closed after it returns', async () => {
    await fixture.flaky.stop();
    await driveUntil('the console to show the breaker open', () => breakerShown('open'));
    const cell = await page.$eval('tr[data-engine="flaky"] td.breaker', (td) => td.textContent ?? '');
    expect(cell).toMatch(/since \S+/);
    await page.screenshot({ path: path.join(artifactsDir(), 'console-breaker-open.png'), fullPage: true });

    await fixture.restartFlaky();
    await driveUntil('the console to show the breaker closed', () => breakerShown('closed'));
    expect(await page.$eval('tr[data-engine="flaky"] td.breaker', (td) => td.textContent ?? '')).toContain('closed');
  }, 60_000);

  it('runs a search, shows progress, and the top hit’s lineage adds up and points at each engine’s list', async () => {
    await page.type('#query', 'boundary layer transition on a flat plate');
    await page.click('#search');
    await page.waitForSelector('#fused tbody tr', { timeout: 20_000 });
    const top = await page.$eval('#fused tbody tr', (tr) => ({
      id: tr.getAttribute('data-id'),
      score: Number(tr.querySelector('.score')?.getAttribute('data-score')),
      sum: Number(tr.querySelector('.lineage')?.getAttribute('data-sum')),
      contributions: [...tr.querySelectorAll('.contribution')].map((c) => ({
        engine: c.getAttribute('data-engine'),
        rank: Number(c.getAttribute('data-rank')),
      })),
    }));
    expect(top.contributions.length).toBeGreaterThan(0);
    expect(top.sum).toBe(top.score); // same scorer, same order as the fusion: exactly equal
    for (const { engine, rank } of top.contributions) {
      const atRank = await page.$eval(`.engine-list[data-engine="${engine}"] tbody tr:nth-child(${rank})`, (tr) =>
        tr.getAttribute('data-id'),
      );
      expect(atRank).toBe(top.id);
    }
    expect(await page.$$eval('#progress-log li', (items) => items.length)).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(artifactsDir(), 'console-search.png'), fullPage: true });
  });

  it('never sends the engine credential to the page', async () => {
    await Promise.all(pending);
    const streamed = (await page.evaluate('window.__received')) as string[];
    expect(bodies.length).toBeGreaterThanOrEqual(5); // page, two scripts, two styles, uPlot
    expect(streamed.some((data) => data.includes('"engines"'))).toBe(true);
    const everything = [...bodies, ...streamed, await page.content()];
    for (const text of everything) expect(text).not.toContain(ENGINE_SECRET);
  });
});
