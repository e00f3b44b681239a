/**
 * The benchmark's spec floor (bench/lib/spec-floor.js) stands for "what RCP/1 requires of any
 * gateway", so it must do that work, and the same way the gateway does: over the same engines it
 * answers the first page with the gateway's hits (same order, fused scores and origin tags), a
 * cursor when more hits exist, and -32602 for bad params. Also the passthrough scenarios of
 * `npm run bench` in smoke form (the full smoke run is in the soak tier): every figure printed,
 * no bad answers. How fast anything ran is not asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { rpc } from '../support/http-client.js';
import {
  REPO_ROOT,
  spawnCaptured,
  startGateway,
  startHttpEngine,
  stopChild,
  waitForEvent,
  waitForLine,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { runScript } from '../soak/run-script.js';

interface Hit {
  id: string | number;
  score: number;
  meta?: Record<string, unknown>;
}
interface Page {
  hits: Hit[];
  nextCursor?: string;
}

let engines: EngineHandle[] = [];
let gateway: GatewayHandle;
let floor: { url: string; stop: () => Promise<number | null> };

async function startFloor(urls: string[], extra: string[] = []): Promise<{ url: string; stop: () => Promise<number | null> }> {
  const { proc, out } = spawnCaptured(
    process.execPath,
    [path.join(REPO_ROOT, 'bench/lib/spec-floor.js'), '--engines', urls.join(','), ...extra],
    {},
  );
  const m = await waitForLine(proc, /^\{"listening":"(http:[^"]+)"\}$/, out, 10_000, 'spec floor');
  return { url: m[1]!, stop: () => stopChild(proc) };
}

beforeAll(async () => {
  engines = await Promise.all([startHttpEngine(['--id', 'floor-a']), startHttpEngine(['--id', 'floor-b', '--reverse'])]);
  // The floor names its engines e0, e1… in the order given; the gateway's ids match.
  gateway = await startGateway({
    config: { engines: engines.map((e, i) => ({ id: `e${i}`, transport: 'http', url: e.url })), gateway: { logLevel: 'warn' } },
  });
  floor = await startFloor(engines.map((e) => e.url));
}, 60_000);

afterAll(async () => {
  await floor?.stop();
  await gateway?.stop();
  await Promise.all(engines.map((e) => e.stop()));
});

/** What both must agree on: identity, order, fused score and the §16.3 origin tags of each hit. */
const essentials = (page: Page) =>
  page.hits.map((h) => ({
    id: h.id,
    score: h.score,
    engine: h.meta?.engine,
    engineRank: h.meta?.engineRank,
    fusedScore: h.meta?.fusedScore,
    engines: h.meta?.engines,
  }));

describe('the spec floor does the work RCP/1 requires, as the gateway does it', () => {
  it('answers the first page with the gateway’s fused hits and a cursor', async () => {
    let cursors = 0;
    for (const query of ['graph index query retrieval', 'gateway', 'fusion ranking']) {
      const params = { query, k: 10 };
      const viaGateway = await rpc<Page>(gateway.url, 'retrieve', params);
      const viaFloor = await rpc<Page>(floor.url, 'retrieve', params);
      expect(viaGateway.error).toBeUndefined();
      expect(viaFloor.error).toBeUndefined();
      const g = viaGateway.result!;
      const f = viaFloor.result!;
      expect(g.hits.length).toBeGreaterThan(0);
      expect(essentials(f)).toEqual(essentials(g));
      expect(typeof f.nextCursor === 'string').toBe(typeof g.nextCursor === 'string');
      if (typeof f.nextCursor === 'string') cursors++;
    }
    expect(cursors, 'some query has more hits than one page').toBeGreaterThan(0);
  });

  it('refuses invalid params with -32602, as the gateway does', async () => {
    for (const params of [{ query: 'q', k: -1 }, { k: 3 }, { query: 'q', k: 'ten' }]) {
      expect((await rpc(floor.url, 'retrieve', params)).error?.code).toBe(-32602);
      expect((await rpc(gateway.url, 'retrieve', params)).error?.code).toBe(-32602);
    }
  });
});

describe('the spec floor fails as §16.2 asks', () => {
  it('skips a dead engine with a note, and answers -32010 when every engine is dead', async () => {
    const dead = 'http://127.0.0.1:9/rcp'; // the discard port: nothing listens there on loopback
    const partial = await startFloor([engines[0]!.url, dead]);
    const none = await startFloor([dead]);
    try {
      const thin = await rpc<Page & { usage: { notes?: string[] } }>(partial.url, 'retrieve', { query: 'gateway', k: 5 });
      expect(thin.result?.hits.length).toBeGreaterThan(0);
      expect(thin.result?.usage.notes).toEqual(['e1: failed']);
      expect((await rpc(none.url, 'retrieve', { query: 'gateway', k: 5 })).error?.code).toBe(-32010);
    } finally {
      await Promise.all([partial.stop(), none.stop()]);
    }
  });
});

describe('the spec floor keeps its deadline (§16.2)', () => {
  it.each(['dispatch', 'signal'])(
    'cuts a hanging engine when the deadline fires (--cut %s): the engine sees the leg dropped, the client a degraded answer',
    async (how) => {
      const hanging = await startHttpEngine(['--id', 'floor-hang', '--fault', 'hang']);
      const cut = await startFloor([engines[0]!.url, hanging.url], ['--deadline-ms', '300', '--cut', how]);
      try {
        const thin = await rpc<Page & { usage: { notes?: string[] } }>(cut.url, 'retrieve', { query: 'gateway', k: 5 });
        expect(thin.result?.hits.length).toBeGreaterThan(0);
        expect(thin.result?.usage.notes).toEqual(['e1: failed']);
        const aborted = await waitForEvent(hanging.eventsFile, (e) => e.ev === 'abort' && e.method === 'retrieve');
        expect(aborted.ev).toBe('abort');
      } finally {
        await Promise.all([cut.stop(), hanging.stop()]);
      }
    },
  );
});

describe('bench smoke: passthrough against both ceilings', () => {
  it('prints B, D1 and F1 with no bad answers, and the B÷D1 and B÷F1 ratios', async () => {
    const { code, out } = await runScript('bench/run.js', ['--smoke', '--only', 'B,D1,F1']);
    expect(code, out).toBe(0);
    for (const scenario of ['B client → gateway → 1 engine', 'D1 bare proxy → 1 engine', 'F1 spec floor → 1 engine']) {
      expect(out, `${scenario}\n${out}`).toMatch(
        new RegExp(`^${scenario}\\s+\\d+\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d\\s+\\d+\\s+\\d+\\s+0$`, 'm'),
      );
    }
    for (const ratio of ['B÷D1', 'B÷F1']) {
      expect(out, out).toMatch(new RegExp(`^ratio ${ratio} = \\d+\\.\\d+ \\(target ≥ 0\\.8\\): (met|missed)`, 'm'));
    }
    expect(out, out).toMatch(/^- the spec floor reaches \d+\.\d\d of the bare proxy \(F1÷D1\)/m);
  }, 120_000);
});
