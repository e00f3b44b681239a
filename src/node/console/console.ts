/**
 * The operator console (`gateway.console.enabled`): a page at `/console` and its live data.
 *   GET /console                  the page (console/index.html)
 *   GET /console/assets/NAME      its script, style and uPlot
 *   GET /console/api/state        one JSON snapshot (counters sampled on demand)
 *   GET /console/api/stream       SSE: `history` (chart points held), then a `state` frame a second
 *   GET /console/api/search?q=…   SSE: one explorer search (search.ts)
 * Every route sits behind the guard (loopback peers by default, guard.ts).
 */
import type { Context, Hono } from 'hono';
import type { GatewaySettings } from '../../core/config/schema.js';
import { ErrorCode, RcpError } from '../../core/protocol/errors.js';
import type { RcpService } from '../../core/service/contract.js';
import type { Engine } from '../../core/upstream/engine.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { NodeHttpEnv } from '../server/node-request-io.js';
import { assetBytes, ASSETS } from './assets.js';
import { ExperimentsProbe, type ExperimentsReadout } from './experiments.js';
import { loopbackOnly, type ConsoleGuard } from './guard.js';
import { Sampler } from './sampler.js';
import { parseSearch, searchRefused, searchStream } from './search.js';
import { SSE_HEADERS, sseResponse } from './sse.js';
import { chartPoint, consoleState, RATE_WINDOW_MS, type ChartPoint, type ConsoleState } from './state.js';
import type { Sample } from './sample.js';

export const CONSOLE_PATH = '/console';

export interface ConsoleSources {
  engines(): readonly Engine[];
  settings(): GatewaySettings;
  metrics: GatewayMetrics;
  /** The service the gateway's clients are served by (searches are observed like theirs). */
  service(): RcpService;
}

export interface ConsoleFrame {
  state: ConsoleState;
  point: ChartPoint;
  experiments: ExperimentsReadout;
}

const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * Live streams (state and searches) open at once, over all watchers: each costs a frame a second
 * (or a search's fan-out), and loopback peers can open as many connections as they like.
 */
export const MAX_CONSOLE_STREAMS = 32;

export class OperatorConsole {
  private readonly sampler: Sampler;
  private readonly experiments: ExperimentsProbe;
  private openStreams = 0;
  /** The frame of the latest sample, built once for every watcher of that tick. */
  private latest: { sample: Sample; frame: Promise<ConsoleFrame> } | undefined;

  constructor(private readonly sources: ConsoleSources) {
    this.sampler = new Sampler(sources.metrics.registry, () => sources.engines().map((engine) => engine.id));
    this.experiments = new ExperimentsProbe(() => sources.service());
  }

  /** Mount the routes on the gateway's HTTP app, behind `guard`. */
  mount(app: Hono<NodeHttpEnv>, guard: ConsoleGuard = loopbackOnly): void {
    const refuse = (c: Context<NodeHttpEnv>): Response | undefined =>
      guard(c) ? undefined : c.text('the console answers loopback clients only\n', 403, { 'cache-control': 'no-store' });
    const page = (c: Context<NodeHttpEnv>): Promise<Response> | Response => refuse(c) ?? this.asset('index.html');
    app.get(CONSOLE_PATH, page);
    app.get(`${CONSOLE_PATH}/`, page);
    app.get(`${CONSOLE_PATH}/assets/:name`, (c) => refuse(c) ?? this.asset(c.req.param('name')));
    app.get(`${CONSOLE_PATH}/api/state`, async (c) => refuse(c) ?? c.json(await this.frame(await this.sampler.sampleNow()), 200, NO_STORE));
    // A HEAD reaches GET routes (Hono runs the handler and drops the body): a stream's headers
    // only, so no watcher subscribes and no search runs for a body nobody reads.
    app.get(`${CONSOLE_PATH}/api/stream`, (c) => refuse(c) ?? headOnly(c) ?? this.counted((onClose) => this.stream(onClose)));
    app.get(`${CONSOLE_PATH}/api/search`, (c) => {
      const refused = refuse(c) ?? headOnly(c);
      if (refused) return refused;
      // The explorer carries no credential: with client auth on, a search from it would skip the
      // tenant's engine scope, its quota and the audit log, so it is refused (state stays open).
      if (this.sources.settings().auth.enabled) return searchRefused(SEARCH_NEEDS_AUTH);
      let search;
      try {
        search = parseSearch(new URL(c.req.url), this.sources.settings());
      } catch (err) {
        return searchRefused(err);
      }
      return this.counted((onClose) => searchStream(search, this.sources.service(), onClose));
    });
  }

  /** A stream within MAX_CONSOLE_STREAMS, counted from now until it ends (sse.ts runs `onClose` once). */
  private counted(open: (onClose: () => void) => Response): Response {
    if (this.openStreams >= MAX_CONSOLE_STREAMS) {
      return new Response(`at most ${MAX_CONSOLE_STREAMS} console streams at once\n`, {
        status: 503,
        headers: { 'retry-after': '5', ...NO_STORE },
      });
    }
    this.openStreams += 1;
    return open(() => {
      this.openStreams -= 1;
    });
  }

  /** The frame for `sample`, built once however many watchers it goes to. */
  private frameOf(sample: Sample): Promise<ConsoleFrame> {
    if (this.latest?.sample !== sample) this.latest = { sample, frame: this.frame(sample) };
    return this.latest.frame;
  }

  async frame(sample: Sample): Promise<ConsoleFrame> {
    const baseline = this.sampler.before(sample, RATE_WINDOW_MS) ?? this.sampler.before(sample, 0);
    const state = consoleState({
      engines: this.sources.engines(),
      settings: this.sources.settings(),
      breakerChanges: this.sources.metrics.breakerChanges,
      sample,
      baseline,
      watched: this.sampler.watching,
    });
    return { state, point: chartPoint(sample, baseline), experiments: await this.experiments.read() };
  }

  private stream(onClose: () => void): Response {
    return sseResponse((channel) => {
      const history = this.sampler.samples.map((sample) => chartPoint(sample, this.sampler.before(sample, RATE_WINDOW_MS)));
      channel.send('history', history);
      const send = (sample: Sample): void => {
        this.frameOf(sample).then(
          (frame) => channel.send('state', frame),
          () => undefined,
        );
      };
      void this.sampler.sampleNow().then(send, () => undefined);
      return this.sampler.watch(send);
    }, onClose);
  }

  private async asset(name: string): Promise<Response> {
    const bytes = assetBytes(name);
    if (!bytes) return new Response('not found\n', { status: 404 });
    return new Response(await bytes, {
      headers: { 'content-type': ASSETS[name]!.contentType, 'cache-control': 'no-cache', ...PAGE_HEADERS },
    });
  }
}

const NO_STORE = { 'cache-control': 'no-store' };

const SEARCH_NEEDS_AUTH = new RcpError(
  ErrorCode.Unauthorized,
  'the search explorer is off while gateway.auth is enabled: search through the RCP endpoint with a key',
);

/** A HEAD to a stream route: the stream's headers, no body, nothing started. */
function headOnly(c: Context<NodeHttpEnv>): Response | undefined {
  return c.req.method === 'HEAD' ? new Response(null, { headers: SSE_HEADERS }) : undefined;
}

/**
 * Mount the console on the gateway's HTTP app. `guard` decides who may open it (loopback peers
 * by default); an authenticating admin guard is passed here.
 */
export function mountConsole(
  app: Hono<NodeHttpEnv>,
  metrics: GatewayMetrics,
  gateway: () => { readonly engines: readonly Engine[]; readonly settings: GatewaySettings },
  service: () => RcpService,
  guard: ConsoleGuard = loopbackOnly,
): OperatorConsole {
  const operatorConsole = new OperatorConsole({ engines: () => gateway().engines, settings: () => gateway().settings, metrics, service });
  operatorConsole.mount(app, guard);
  return operatorConsole;
}
