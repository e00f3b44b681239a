/**
 * The edge runtime's own pieces, without a runtime: config rules, the console logger, and the
 * carried timers (workerd drops a timer when the request that armed it has answered; the table
 * fires it at the start of the next request instead).
 */
import { describe, expect, it } from 'vitest';
import { edgeConfig } from '../../src/edge/config.js';
import { serverStart } from '../../src/edge/server-entry.js';
import { ConfigError } from '../../src/core/config/validate.js';
import { ConsoleLogger, type ConsoleSink } from '../../src/edge/console-logger.js';
import { LATE_MS, installCarriedTimers, type TimerScope } from '../../src/edge/carried-timers.js';

const HTTP_ENGINE = { id: 'web', transport: 'http', url: 'http://127.0.0.1:9/rcp' };
const RULES = { requireCursorSecret: true };
const SECRET = { cursorSecret: 'a-shared-secret-of-some-length' };

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('edge config', () => {
  it('accepts HTTP engines, interpolating ${NAME} from the env bindings', () => {
    const config = edgeConfig(
      JSON.stringify({ engines: [HTTP_ENGINE], gateway: { cursorSecret: '${CURSOR_SECRET}' } }),
      { CURSOR_SECRET: 'from-a-worker-secret-binding' },
      RULES,
    );
    expect(config.gateway.cursorSecret).toBe('from-a-worker-secret-binding');
    expect(config.engines[0]!.url).toBe('http://127.0.0.1:9/rcp');
  });

  it('refuses an adapter engine, naming its entry', () => {
    const raw = {
      engines: [HTTP_ENGINE, { id: 'docs-db', transport: 'adapter', adapter: { kind: 'sqlite', file: 'docs.db' } }],
      gateway: SECRET,
    };
    expect(problemsOf(() => edgeConfig(raw, {}, RULES))).toEqual([
      'engines[1].transport: adapter engines cannot run at the edge (their database drivers need Node); serve "docs-db" over HTTP',
    ]);
  });

  it('refuses a stdio engine, naming its entry', () => {
    const raw = { engines: [HTTP_ENGINE, { id: 'local', transport: 'stdio', command: ['node', 'engine.js'] }], gateway: SECRET };
    expect(problemsOf(() => edgeConfig(raw, {}, RULES))).toEqual([
      expect.stringMatching(/^engines\[1\]\.transport: stdio engines cannot run at the edge/),
    ]);
  });

  it('reports the edge rules together with the schema problems', () => {
    const raw = {
      engines: [
        { id: 'bad', transport: 'http', url: 'ftp://nope' },
        { id: 'local', transport: 'stdio', command: ['node', 'engine.js'] },
      ],
    };
    expect(problemsOf(() => edgeConfig(raw, {}, RULES))).toEqual([
      'engines[0].url: expected an http(s) URL',
      expect.stringMatching(/^engines\[1\]\.transport: stdio engines cannot run at the edge/),
      expect.stringMatching(/^gateway\.cursorSecret: required at the edge/),
    ]);
  });

  it('refuses the Redis quota store, which only the Node gateway has', () => {
    const raw = { engines: [HTTP_ENGINE], gateway: { ...SECRET, quotas: { store: 'redis', redisUrl: 'redis://127.0.0.1:6379/0' } } };
    expect(problemsOf(() => edgeConfig(raw, {}, RULES))).toEqual([
      expect.stringMatching(/^gateway\.quotas\.store: "redis" is served by the Node gateway only/),
    ]);
  });

  it('requires a cursor secret where isolates must agree on it, and only there', () => {
    const raw = { engines: [HTTP_ENGINE] };
    expect(problemsOf(() => edgeConfig(raw, {}, RULES))).toEqual([expect.stringMatching(/^gateway\.cursorSecret: required at the edge/)]);
    expect(edgeConfig(raw, {}, { requireCursorSecret: false }).gateway.cursorSecret).toBeUndefined();
  });

  it('needs no cursor secret with gateway.pagination off (no cursor is sealed or opened)', () => {
    const raw = { engines: [HTTP_ENGINE], gateway: { pagination: false } };
    expect(edgeConfig(raw, {}, RULES).gateway.pagination).toBe(false);
  });

  it('reports schema problems, unset variables and bad JSON by path', () => {
    expect(
      problemsOf(() => edgeConfig({ engines: [{ id: 'x', transport: 'http', url: 'ftp://nope' }], gateway: SECRET }, {}, RULES)),
    ).toEqual(['engines[0].url: expected an http(s) URL']);
    expect(
      problemsOf(() => edgeConfig({ engines: [{ ...HTTP_ENGINE, url: '${ENGINE_URL}' }], gateway: SECRET }, { ENGINE_URL: 42 }, RULES)),
    ).toEqual(['engines[0].url: environment variable ENGINE_URL is not set']);
    expect(problemsOf(() => edgeConfig('{"engines": [', {}, RULES))).toEqual([expect.stringMatching(/^not valid JSON/)]);
  });
});

describe('console logger', () => {
  function capture(): { sink: ConsoleSink; lines: Array<{ via: string; line: Record<string, unknown> }> } {
    const lines: Array<{ via: string; line: Record<string, unknown> }> = [];
    const at =
      (via: string) =>
      (text: string): void =>
        void lines.push({ via, line: JSON.parse(text) as Record<string, unknown> });
    return { sink: { debug: at('debug'), log: at('log'), warn: at('warn'), error: at('error') }, lines };
  }

  it('writes pino-shaped JSON lines at or above its level, through the matching console method', () => {
    const { sink, lines } = capture();
    const logger = new ConsoleLogger('info', { svc: 'rcp-gateway' }, sink).child({ engine: 'web' });
    logger.debug({ dropped: true }, 'too chatty');
    logger.info({ from: 'closed', to: 'open' }, 'circuit breaker transition');
    logger.error({ err: new Error('boom') }, 'failed');
    expect(lines.map((l) => l.via)).toEqual(['log', 'error']);
    expect(lines[0]!.line).toMatchObject({
      level: 30,
      svc: 'rcp-gateway',
      engine: 'web',
      from: 'closed',
      to: 'open',
      msg: 'circuit breaker transition',
    });
    expect(lines[0]!.line.time).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(lines[1]!.line).toMatchObject({ level: 50, err: { type: 'Error', message: 'boom' } });
    expect(logger.isLevelEnabled('debug')).toBe(false);
  });
});

describe('carried timers', () => {
  /** A scope whose native timers belong to a "request": ending it drops them unfired, as workerd does. */
  function requestScope(): { scope: TimerScope; clock: { now: number }; fireDue(): void; endRequest(): void } {
    const clock = { now: 1_000 };
    let natives: Array<{ at: number; every?: number; fn: () => void; live: boolean }> = [];
    const arm = (fn: () => void, ms = 0, every?: number): object => {
      const timer = { at: clock.now + ms, every, fn, live: true };
      natives.push(timer);
      return timer;
    };
    const cancel = (timer: unknown): void => {
      if (timer && typeof timer === 'object') (timer as { live: boolean }).live = false;
    };
    const scope: TimerScope = {
      setTimeout: (fn, ms) => arm(fn as () => void, ms),
      setInterval: (fn, ms) => arm(fn as () => void, ms, ms),
      clearTimeout: cancel,
      clearInterval: cancel,
    };
    return {
      scope,
      clock,
      fireDue() {
        for (const timer of natives) {
          while (timer.live && timer.at <= clock.now) {
            timer.fn();
            if (timer.every === undefined) timer.live = false;
            else timer.at += timer.every;
          }
        }
      },
      endRequest() {
        natives = [];
      },
    };
  }

  it('a timer whose request is alive fires natively, once', () => {
    const env = requestScope();
    const timers = installCarriedTimers(env.scope, () => env.clock.now);
    let fired = 0;
    env.scope.setTimeout(() => fired++, 100);
    env.clock.now += 100;
    env.fireDue();
    env.clock.now += LATE_MS * 4;
    timers.catchUp();
    expect(fired).toBe(1);
    expect(timers.size).toBe(0);
  });

  it('a timer dropped with its request fires at the start of the next request, not before it is overdue', () => {
    const env = requestScope();
    const timers = installCarriedTimers(env.scope, () => env.clock.now);
    let fired = 0;
    env.scope.setTimeout(() => fired++, 5_000);
    env.endRequest();
    env.clock.now += 5_000 + LATE_MS; // due, but a live request's timer could still be about to fire
    timers.catchUp();
    expect(fired).toBe(0);
    env.clock.now += 1;
    timers.catchUp();
    timers.catchUp();
    expect(fired).toBe(1);
  });

  it('a cleared timer never fires, wherever it was armed', () => {
    const env = requestScope();
    const timers = installCarriedTimers(env.scope, () => env.clock.now);
    let fired = 0;
    const handle = env.scope.setTimeout(() => fired++, 10) as { unref(): unknown };
    expect(handle.unref()).toBe(handle); // Node-style handles, for code that unrefs its timers
    env.endRequest();
    env.scope.clearTimeout(handle);
    env.clock.now += 10_000;
    timers.catchUp();
    expect(fired).toBe(0);
  });

  it('an interval dropped with its request ticks once per period it missed, then keeps its phase', () => {
    const env = requestScope();
    const timers = installCarriedTimers(env.scope, () => env.clock.now);
    let ticks = 0;
    env.scope.setInterval(() => ticks++, 1_000);
    env.clock.now += 2_000; // t = 3000: native ticks at 2000 and 3000
    env.fireDue();
    expect(ticks).toBe(2);
    env.endRequest();
    env.clock.now += 3_500; // t = 6500: missed 4000, 5000 and 6000
    timers.catchUp();
    expect(ticks).toBe(5);
    env.clock.now += 400; // t = 6900: the next is due at 7000
    timers.catchUp();
    expect(ticks).toBe(5);
  });
});

describe('Deno and Bun entries: the bind policy of `rcp-gateway serve`', () => {
  const read = (text: string) => () => Promise.resolve(text);
  const config = (gateway: Record<string, unknown> = {}): string => JSON.stringify({ engines: [HTTP_ENGINE], gateway });

  it('serve on loopback with auth off', async () => {
    const start = await serverStart(['--config', 'gw.json'], {}, read(config()));
    expect(start.host).toBe('127.0.0.1');
  });

  it('refuse a non-loopback address with auth off, unless told an authenticating proxy fronts them', async () => {
    const refused = await serverStart(['--config', 'gw.json', '--host', '0.0.0.0'], {}, read(config())).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems[0]).toMatch(/^refusing to serve on 0\.0\.0\.0 with client authentication off/);
    const fronted = await serverStart(['--config', 'gw.json', '--host', '0.0.0.0', '--allow-unauthenticated'], {}, read(config()));
    expect(fronted.host).toBe('0.0.0.0');
    const configured = await serverStart(
      ['--config', 'gw.json'],
      {},
      read(config({ host: '0.0.0.0', auth: { allowUnauthenticated: true } })),
    );
    expect(configured.host).toBe('0.0.0.0');
  });

  it('serve a non-loopback address with auth on', async () => {
    const auth = { enabled: true, apiKeys: [{ id: 'k', hash: `sha256:${'0'.repeat(64)}` }] };
    const start = await serverStart(['--config', 'gw.json', '--host', '0.0.0.0'], {}, read(config({ auth })));
    expect(start.config.gateway.auth.enabled).toBe(true);
  });
});
