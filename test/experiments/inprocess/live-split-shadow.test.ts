/**
 * Live split and shadow experiments in process (src/core/federation/experiment-*.ts): a real
 * gateway over fake engines behind the in-memory transport. Shadow pairs are awaited through the
 * experiment hooks, never by sleeping.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ShadowComparison } from '../../../src/core/experiments/hooks.js';
import { RcpError } from '../../../src/core/protocol/errors.js';
import type { JsonObject } from '../../../src/core/protocol/jsonrpc.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../../support/in-process.js';
import { fusedCursorPosition } from '../../support/fused-cursor.js';

interface Answer extends JsonObject {
  hits: Array<{ id: string; score: number; meta: { engine: string } }>;
  usage: JsonObject;
  _meta: JsonObject & { 'x-rcpgw'?: { experiment: string; arm: string; forced?: boolean } };
}

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** An arm per engine (`onlyA`, …) and `both` (engines a and b). */
function armsOver(engines: readonly FakeEngine[]): JsonObject {
  const arms: JsonObject = { both: { engines: ['a', 'b'] } };
  for (const engine of engines) arms[`only${engine.id.toUpperCase()}`] = { engines: [engine.id] };
  return arms;
}

async function gateway(list: unknown[], engines = [new FakeEngine('a'), new FakeEngine('b')], hooks = {}): Promise<InProcessGateway> {
  running = await startInProcess(engines, { gateway: { experiments: { arms: armsOver(engines), list, report: true } }, hooks });
  return running;
}

const retrieve = (gw: InProcessGateway, user: string | undefined, extra: JsonObject = {}): Promise<Answer> =>
  gw.call('retrieve', { query: 'q', k: 5, ...extra }, user === undefined ? {} : { headers: { 'x-rcpgw-user': user } }) as Promise<Answer>;

const engineOf = (answer: Answer): Set<string> => new Set(answer.hits.map((hit) => hit.meta.engine));

describe('split experiments in the retrieve path', () => {
  const split = { id: 'ab', kind: 'split', arms: { onlyA: 1, onlyB: 1 } };

  it('serves each user by one sticky arm and names it in _meta', async () => {
    const gw = await gateway([split]);
    const seen = new Map<string, number>();
    for (let user = 0; user < 40; user++) {
      const first = await retrieve(gw, `user-${user}`);
      const again = await retrieve(gw, `user-${user}`);
      const tag = first._meta['x-rcpgw']!;
      expect(tag.experiment).toBe('ab');
      expect(again._meta['x-rcpgw']!.arm).toBe(tag.arm);
      expect([...engineOf(first)]).toEqual([tag.arm === 'onlyA' ? 'a' : 'b']);
      seen.set(tag.arm, (seen.get(tag.arm) ?? 0) + 1);
    }
    expect([...seen.keys()].sort()).toEqual(['onlyA', 'onlyB']);
  });

  it('serves requests without the key, outside the share, or naming their own setup as usual', async () => {
    const gw = await gateway([{ ...split, id: 'none', traffic: 0 }, split]);
    const plain = await retrieve(gw, undefined);
    expect(plain._meta['x-rcpgw']).toBeUndefined();
    expect(engineOf(plain)).toEqual(new Set(['a', 'b']));
    const own = await retrieve(gw, 'user-1', { _meta: { 'x-rcpgw': { engines: ['a', 'b'] } } });
    expect(own._meta['x-rcpgw']).toBeUndefined();
    expect(engineOf(own)).toEqual(new Set(['a', 'b']));
    // traffic 0 takes nobody: the request falls through to the next experiment of the list.
    expect((await retrieve(gw, 'user-1'))._meta['x-rcpgw']!.experiment).toBe('ab');
  });

  it('forces an arm only when the experiment allows it', async () => {
    const gw = await gateway([
      { ...split, id: 'forceable', allowForce: true },
      { ...split, id: 'strict', traffic: 0 },
    ]);
    const forced = await retrieve(gw, undefined, { _meta: { 'x-rcpgw': { forceArm: { forceable: 'onlyB' } } } });
    expect(forced._meta['x-rcpgw']).toEqual({ experiment: 'forceable', arm: 'onlyB', forced: true });
    expect(engineOf(forced)).toEqual(new Set(['b']));
    const bad = await retrieve(gw, undefined, { _meta: { 'x-rcpgw': { forceArm: { forceable: 'ghost' } } } }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(RcpError);
    expect((bad as RcpError).code).toBe(-32602);
    const ignored = await retrieve(gw, undefined, { _meta: { 'x-rcpgw': { forceArm: { strict: 'onlyB' } } } });
    expect(ignored._meta['x-rcpgw']).toBeUndefined();
  });

  it('reports per-arm outcomes through x-rcpgw/experiments', async () => {
    const gw = await gateway([split]);
    for (let user = 0; user < 10; user++) await retrieve(gw, `u${user}`);
    const report = (await gw.call('x-rcpgw/experiments')) as {
      experiments: Array<{ id: string; arms: Record<string, { requests: number; errors: number }> }>;
    };
    const arms = report.experiments[0]!.arms;
    expect(Object.values(arms).reduce((sum, arm) => sum + arm.requests, 0)).toBe(10);
    expect(Object.values(arms).every((arm) => arm.errors === 0)).toBe(true);
    const { response } = await gw.request('x-rcpgw/experiments');
    expect('result' in response).toBe(true);
  });
});

describe('what counts as an arm outcome', () => {
  const split = { id: 'ab', kind: 'split', arms: { onlyA: 1, onlyB: 1 } };
  type Report = { experiments: Array<{ id: string; arms: Record<string, { requests: number; errors: number }> }> };
  const tallies = async (gw: InProcessGateway): Promise<{ requests: number; errors: number }> => {
    const report = (await gw.call('x-rcpgw/experiments')) as Report;
    const arms = Object.values(report.experiments.find((e) => e.id === 'ab')?.arms ?? {});
    return { requests: arms.reduce((n, arm) => n + arm.requests, 0), errors: arms.reduce((n, arm) => n + arm.errors, 0) };
  };

  it('a request refused for what it sent (a forged cursor, -32602) is not counted against its arm', async () => {
    const gw = await gateway([split]);
    const refused = await retrieve(gw, 'u1', { cursor: 'not-a-cursor-this-gateway-sealed' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RcpError);
    expect((refused as RcpError).code).toBe(-32602);
    expect(await tallies(gw)).toEqual({ requests: 0, errors: 0 });
    await retrieve(gw, 'u1');
    expect(await tallies(gw)).toEqual({ requests: 1, errors: 0 });
  });

  it('an arm whose engines reject the request is counted as an error, -32602 or not', async () => {
    const engines = [new FakeEngine('a').fail(-32602), new FakeEngine('b').fail(-32602)];
    const gw = await gateway([split], engines);
    const failed = await retrieve(gw, 'u1').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(RcpError);
    // The engines' own rejection is relayed (§16.2) and names them: an outcome of the arm.
    expect((failed as RcpError).code).toBe(-32602);
    expect((failed as RcpError).data).toHaveProperty('engines');
    expect(await tallies(gw)).toEqual({ requests: 1, errors: 1 });
  });
});

/** Collects shadow comparisons; `next()` resolves on the next one. */
function shadowWatch(): {
  hooks: { onShadowComparison: (c: ShadowComparison) => void };
  next: () => Promise<ShadowComparison>;
  all: ShadowComparison[];
} {
  const all: ShadowComparison[] = [];
  let waiting: ((c: ShadowComparison) => void) | undefined;
  return {
    all,
    hooks: {
      onShadowComparison: (c) => {
        all.push(c);
        waiting?.(c);
        waiting = undefined;
      },
    },
    next: () => new Promise((resolve) => (waiting = resolve)),
  };
}

/**
 * The answer apart from its timings and trace: `usage.latencyMs`, `_meta.traceId`, and of the
 * `nextCursor` its expiry and tag (a cursor is signed per request; the position it
 * resumes from is compared).
 */
const comparable = (answer: Answer): JsonObject => {
  const { latencyMs: _latency, ...usage } = answer.usage;
  const { traceId: _trace, ...meta } = answer._meta;
  const cursor = typeof answer.nextCursor === 'string' ? fusedCursorPosition(answer.nextCursor) : undefined;
  return { ...answer, usage, _meta: meta, nextCursor: cursor };
};

describe('shadow experiments in the retrieve path', () => {
  const shadow = { id: 'sh', kind: 'shadow', primary: 'both', shadow: 'onlyB', sample: 1, deadlineMs: 200 };

  it('answers exactly as without the experiment, and compares the pair', async () => {
    const watch = shadowWatch();
    const off = await gateway([]);
    const plain = await retrieve(off, 'u1');
    await off.stop();
    const on = await gateway([shadow], undefined, watch.hooks);
    const pair = watch.next();
    const answered = await retrieve(on, 'u1');
    expect(comparable(answered)).toEqual(comparable(plain));
    const c = await pair;
    expect(c).toMatchObject({ experiment: 'sh', primary: 'both', shadow: 'onlyB', k: 5, shadowError: false, primaryError: false });
    expect(c.overlapAtK).toBeGreaterThan(0);
    expect(c.rbo).toBeGreaterThan(0);
  });

  it('a hanging or failing shadow arm changes nothing for the client and is counted', async () => {
    const watch = shadowWatch();
    const shadowEngine = new FakeEngine('c').hang();
    const gw = await gateway([{ ...shadow, shadow: 'onlyC' }], [new FakeEngine('a'), new FakeEngine('b'), shadowEngine], watch.hooks);
    // Served as usual (no key) by the primary's setup: the answer the client gets without a shadow.
    const plain = await retrieve(gw, undefined, { _meta: { 'x-rcpgw': { engines: ['a', 'b'] } } });
    const pair = watch.next();
    const answered = await retrieve(gw, 'u1');
    expect(comparable(answered)).toEqual(comparable(plain));
    const c = await pair; // after the shadow's own 200 ms deadline
    expect(c).toMatchObject({ shadowError: true, primaryError: false, rbo: undefined });
    shadowEngine.fail(-32603);
    const failed = watch.next();
    expect(comparable(await retrieve(gw, 'u2'))).toEqual(comparable(plain));
    expect((await failed).shadowError).toBe(true);
  });

  it('the budget caps shadow runs: extra engine calls never exceed it', async () => {
    const shadowEngine = new FakeEngine('c');
    const skipped: string[] = [];
    const gw = await gateway(
      [{ ...shadow, shadow: 'onlyC', budgetPerMinute: 3 }],
      [new FakeEngine('a'), new FakeEngine('b'), shadowEngine],
      {
        onShadowSkipped: (_: string, why: string) => skipped.push(why),
      },
    );
    for (let user = 0; user < 12; user++) await retrieve(gw, `u${user}`);
    expect(shadowEngine.callsOf('retrieve').length).toBe(3);
    expect(skipped).toEqual(Array(9).fill('budget'));
  });

  it('the concurrency cap refuses shadow runs beyond it', async () => {
    const shadowEngine = new FakeEngine('c').hang();
    const skipped: string[] = [];
    const gw = await gateway([{ ...shadow, shadow: 'onlyC', maxConcurrent: 2 }], [new FakeEngine('a'), new FakeEngine('b'), shadowEngine], {
      onShadowSkipped: (_: string, why: string) => skipped.push(why),
    });
    await Promise.all(Array.from({ length: 5 }, (_, user) => retrieve(gw, `u${user}`)));
    expect(shadowEngine.callsOf('retrieve').length).toBe(2);
    expect(skipped).toEqual(Array(3).fill('concurrency'));
  });
});
