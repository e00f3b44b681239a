/**
 * Health endpoints, cheap and unauthenticated, outside the RCP base path:
 *  - `/healthz`: the process is up and its event loop answers.
 *  - `/readyz`: the config is loaded, at least one engine is initialized with its breaker not
 *    open, and the gateway is not draining for shutdown. 503 otherwise, with the reason.
 * Plus `/metrics` (Prometheus text) when metrics are served on the main port.
 */
import type { Env, Hono } from 'hono';
import type { EngineView, MetricsExposition } from '../observability/engine-view.js';

export interface Readiness {
  ready: boolean;
  reason?: string;
  engines: { total: number; ready: number; breakerOpen: number };
}

export function readiness(engines: ReadonlyArray<Pick<EngineView, 'status' | 'breaker'>>, draining: boolean): Readiness {
  let ready = 0;
  let serving = 0;
  let breakerOpen = 0;
  for (const engine of engines) {
    const open = engine.breaker.currentState === 'open';
    if (open) breakerOpen++;
    if (engine.status === 'ready') {
      ready++;
      if (!open) serving++;
    }
  }
  const counts = { total: engines.length, ready, breakerOpen };
  if (draining) return { ready: false, reason: 'draining for shutdown', engines: counts };
  if (ready === 0) return { ready: false, reason: 'no engine is initialized', engines: counts };
  if (serving === 0) return { ready: false, reason: 'every ready engine has an open circuit breaker', engines: counts };
  return { ready: true, engines: counts };
}

export interface OpsRoutes {
  readiness: () => Readiness;
  /** Absent: `/metrics` is not served here (disabled, or on its own port). */
  metrics?: MetricsExposition;
}

/** The answer to one ops path, transport-neutral (used by the Hono app and the metrics port). */
export async function opsAnswer(
  path: string,
  routes: OpsRoutes,
): Promise<{ status: number; contentType: string; body: string } | undefined> {
  switch (path) {
    case '/healthz':
      return { status: 200, contentType: 'application/json', body: '{"status":"ok"}' };
    case '/readyz': {
      const state = routes.readiness();
      return {
        status: state.ready ? 200 : 503,
        contentType: 'application/json',
        body: JSON.stringify({ status: state.ready ? 'ready' : 'not ready', ...state }),
      };
    }
    case '/metrics':
      if (!routes.metrics) return undefined;
      return { status: 200, contentType: routes.metrics.contentType, body: await routes.metrics.expose() };
    default:
      return undefined;
  }
}

/** Mount the ops paths on the main HTTP app (HttpServerOptions.extend). */
export function mountOpsRoutes<E extends Env>(app: Hono<E>, routes: OpsRoutes): void {
  const paths = ['/healthz', '/readyz', ...(routes.metrics ? ['/metrics'] : [])];
  for (const path of paths) {
    app.get(path, async () => {
      const answer = (await opsAnswer(path, routes))!;
      return new Response(answer.body, {
        status: answer.status,
        headers: { 'content-type': answer.contentType, 'cache-control': 'no-store' },
      });
    });
  }
}
