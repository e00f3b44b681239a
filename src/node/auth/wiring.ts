/**
 * Auth and quotas on Node: the core AuthRuntime with the client address read off the socket,
 * and the Redis rate store when `gateway.quotas.store` is "redis".
 */
import type { GatewaySettings } from '../../core/config/schema.js';
import { AuthRuntime } from '../../core/auth/runtime.js';
import type { HttpServerOptions } from '../../core/http/app.js';
import type { SessionOptions } from '../../core/session/session.js';
import type { Logger } from '../observability/log.js';
import type { NodeHttpEnv } from '../server/node-request-io.js';
import { RedisRateLimiter } from './redis-limiter.js';

/** How long startup waits for Redis before serving with the per-replica fallback. */
const REDIS_READY_MS = 3_000;

export async function nodeAuth(settings: GatewaySettings, logger: Logger, logQueries: () => boolean): Promise<NodeAuth> {
  const { quotas } = settings;
  let limiter: RedisRateLimiter | undefined;
  if (quotas.store === 'redis' && quotas.redisUrl !== undefined) {
    limiter = new RedisRateLimiter({ url: quotas.redisUrl, prefix: quotas.redisPrefix, logger });
    if (!(await limiter.ready(REDIS_READY_MS)))
      logger.warn({ store: 'redis' }, 'quota store not reachable yet: limiting per replica meanwhile');
  }
  return new NodeAuth(new AuthRuntime(settings, { logger, logQueries, ...(limiter ? { limiter } : {}) }));
}

export class NodeAuth {
  constructor(readonly runtime: AuthRuntime) {}

  /** HTTP options with the guard installed and audit lines chained onto the session observer. */
  httpOptions(base: Partial<HttpServerOptions<NodeHttpEnv>>): Partial<HttpServerOptions<NodeHttpEnv>> {
    const guard = this.runtime.httpGuard<NodeHttpEnv>((c) => c.env?.incoming?.socket?.remoteAddress);
    return { ...base, ...(guard ? { guard } : {}), session: this.sessionOptions(base.session) };
  }

  /** Session options with the audit observer and, for stdio, the configured principal. */
  sessionOptions(base: Partial<SessionOptions> = {}, transport: 'http' | 'stdio' = 'http'): Partial<SessionOptions> {
    const onFinished = this.runtime.observe(base.onFinished);
    const principal = transport === 'stdio' ? this.runtime.stdioPrincipal() : undefined;
    return { ...base, ...(onFinished ? { onFinished } : {}), ...(principal ? { principal } : {}) };
  }

  close(): Promise<void> {
    return this.runtime.close();
  }
}
