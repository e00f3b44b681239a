/**
 * Cloudflare Workers entry (workerd): `export default { fetch }`, the core's Hono app over the
 * core Gateway with fetch transports. The config comes bundled at build time
 * (`npm run build:edge -- --config FILE`) or from the `RCPGW_CONFIG` binding (JSON text or a JSON
 * var), validated with the same schema as on Node; `${NAME}` reads other bindings (secrets).
 *
 * workerd specifics handled here: one gateway per isolate, started by the first request; timers
 * that outlive their request are carried to the next one (carried-timers.ts); every upstream
 * exchange is tied to the request it runs in (request-scope.ts). Needs the `nodejs_compat` flag
 * (AsyncLocalStorage) and `enable_request_signal` (a client going away aborts its legs).
 */
import { ConfigError } from '../core/config/validate.js';
import { installCarriedTimers } from './carried-timers.js';
import { edgeConfig } from './config.js';
import { ConsoleLogger } from './console-logger.js';
import { EdgeGateway } from './edge-gateway.js';
import { inRequest, keepAlive, type RequestLifetime } from './request-scope.js';

/** Set by the edge build when a config is bundled (esbuild `define`); absent otherwise. */
declare const RCPGW_BUNDLED_CONFIG: object | undefined;

export interface WorkerEnv {
  RCPGW_CONFIG?: string | object;
  [binding: string]: unknown;
}

const timers = installCarriedTimers();
let gateway: EdgeGateway | undefined;
let configProblem: ConfigError | undefined;

function gatewayFor(env: WorkerEnv): EdgeGateway {
  if (gateway) return gateway;
  if (configProblem) throw configProblem;
  const bundled = typeof RCPGW_BUNDLED_CONFIG === 'undefined' ? undefined : RCPGW_BUNDLED_CONFIG;
  const source = bundled ?? env.RCPGW_CONFIG;
  try {
    if (source === undefined)
      throw new ConfigError(['not set: bind the config as RCPGW_CONFIG, or bundle one at build time'], 'RCPGW_CONFIG');
    const config = edgeConfig(source, env, { requireCursorSecret: true }, bundled ? 'bundled config' : 'RCPGW_CONFIG');
    gateway = new EdgeGateway({ config, logger: new ConsoleLogger(config.gateway.logLevel), keepAlive });
    return gateway;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    configProblem = err; // the config cannot change without a redeploy: report it once, answer 500 from then on
    new ConsoleLogger('error').error({ problems: err.problems }, err.message);
    throw err;
  }
}

function configErrorResponse(err: ConfigError): Response {
  return new Response(JSON.stringify({ error: 'invalid gateway config', problems: err.problems }), {
    status: 500,
    headers: { 'content-type': 'application/json' },
  });
}

export default {
  fetch(request: Request, env: WorkerEnv, ctx: RequestLifetime): Promise<Response> {
    return inRequest(ctx, () => {
      timers.catchUp();
      let served: EdgeGateway;
      try {
        served = gatewayFor(env);
      } catch (err) {
        if (err instanceof ConfigError) return Promise.resolve(configErrorResponse(err));
        throw err;
      }
      // The start outlives a first request whose client leaves early: later ones wait on it.
      ctx.waitUntil(served.start());
      // Cloudflare sets (and overwrites) the connecting client's address; absent when run elsewhere.
      return served.fetch(request, request.headers.get('cf-connecting-ip') ?? undefined);
    });
  },
};
