/**
 * Rate quotas shared by every replica, kept in Redis with rate-limiter-flexible (atomic Lua
 * updates, so replicas never double-spend a quota). rate-limiter-flexible counts fixed windows:
 * a bucket of `burst` tokens becomes `burst` requests per window of `burst / ratePerSec`
 * seconds — the same average rate and burst as the in-process token bucket, refilled per window
 * instead of smoothly. While Redis is unreachable each replica falls back to its own in-memory
 * limiter of the same size (the insurance limiter), so quotas keep applying, per replica.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateSettings } from '../../core/auth/config.js';
import { bucketSize, type RateDecision, type RateLimiter } from '../../core/auth/quota.js';
import type { Logger } from '../observability/log.js';

export interface RedisLimiterOptions {
  url: string;
  prefix: string;
  logger: Logger;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly client: Redis;
  private readonly limiters = new Map<string, RateLimiterRedis>();
  private warned = false;

  constructor(private readonly options: RedisLimiterOptions) {
    // No offline queue: while disconnected a call fails at once and the insurance limiter answers,
    // instead of requests waiting on a reconnect.
    this.client = new Redis(options.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    this.client.on('error', (err: Error) => {
      if (this.warned) return;
      this.warned = true;
      options.logger.warn({ err: err.message }, 'quota store (Redis) unreachable: each replica limits on its own until it is back');
    });
    this.client.on('ready', () => {
      this.warned = false;
    });
  }

  /** Resolves once connected (true), or false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      this.client.once('ready', onReady);
    });
  }

  async take(key: string, rate: RateSettings): Promise<RateDecision> {
    try {
      await this.limiterFor(rate).consume(key);
      return { ok: true };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { ok: false, retryAfterMs: Math.max(1, err.msBeforeNext) };
      // Neither Redis nor the insurance limiter answered: let the request through rather than fail it.
      this.options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'quota check failed');
      return { ok: true };
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
    return Promise.resolve();
  }

  private limiterFor(rate: RateSettings): RateLimiterRedis {
    const points = bucketSize(rate);
    const duration = Math.max(1, Math.round(points / rate.ratePerSec));
    const id = `${points}/${duration}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      const keyPrefix = `${this.options.prefix}:rate:${id}`;
      limiter = new RateLimiterRedis({
        storeClient: this.client,
        keyPrefix,
        points,
        duration,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
      });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}
