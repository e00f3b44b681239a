/**
 * Re-reading the config file on SIGHUP or on change (gateway.watchConfig). A file that does not
 * parse or validate is rejected with the exact problems (`engines[1].url: …`) and the running
 * config stays in force; a valid one goes to `Gateway.reload`. One reload at a time; file events
 * are debounced and a rewrite with identical bytes is not a reload.
 */
import { createHash } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, loadConfigFile } from './load.js';
import type { GatewayConfig } from '../../core/config/schema.js';
import type { Logger } from '../observability/log.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { ReloadOutcome } from '../../core/ops/engine-set.js';

export type ReloadTrigger = 'SIGHUP' | 'watch' | 'manual';

/** What the reloader needs from the gateway. */
export interface Reloadable {
  reload(next: GatewayConfig): Promise<ReloadOutcome>;
}

export interface ConfigReloaderOptions {
  file: string;
  gateway: Reloadable;
  logger: Logger;
  metrics?: GatewayMetrics;
  /** Applied to every newly read config before it is used (e.g. command-line overrides). */
  adjust?: (next: GatewayConfig) => void;
  /** Called with the config now in force (e.g. to apply the new log level). */
  onApplied?: (config: GatewayConfig) => void;
  debounceMs?: number;
}

export class ConfigReloader {
  private chain: Promise<unknown> = Promise.resolve();
  private watcher: FSWatcher | undefined;
  private debounce: ReturnType<typeof setTimeout> | undefined;
  private lastDigest: string | undefined;

  constructor(private readonly options: ConfigReloaderOptions) {
    this.lastDigest = digestOf(options.file);
  }

  /** Re-read and apply; resolves true when the new config is in force. */
  reload(trigger: ReloadTrigger): Promise<boolean> {
    const run = this.chain.then(() => this.apply(trigger));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Watch the config file's folder: editors and config management replace the file by rename,
   * and a Kubernetes ConfigMap volume never touches it at all — the kubelet renames a new `..data`
   * symlink over the old one, so the events name `..data_tmp`/`..data`, not the file. Any event
   * in the folder is therefore a reason to look; the content digest decides whether it changed.
   */
  watch(): void {
    if (this.watcher) return;
    this.watcher = watch(dirname(this.options.file), () => {
      clearTimeout(this.debounce);
      this.debounce = setTimeout(() => {
        if (digestOf(this.options.file) === this.lastDigest) {
          this.options.logger.debug({ file: this.options.file }, 'config file unchanged; not reloading');
          return;
        }
        void this.reload('watch');
      }, this.options.debounceMs ?? 150);
      this.debounce.unref?.();
    });
    this.watcher.unref?.();
  }

  close(): void {
    clearTimeout(this.debounce);
    this.watcher?.close();
    this.watcher = undefined;
  }

  private async apply(trigger: ReloadTrigger): Promise<boolean> {
    const { file, logger, metrics } = this.options;
    this.lastDigest = digestOf(file);
    let config: GatewayConfig;
    try {
      config = loadConfigFile(file).config;
      this.options.adjust?.(config);
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message];
      logger.error({ trigger, file, problems }, `config reload rejected, previous config stays in force: ${problems.join('; ')}`);
      metrics?.reload('invalid');
      return false;
    }
    try {
      const summary = await this.options.gateway.reload(config);
      metrics?.reload('ok');
      logger.info({ trigger, file, ...summary }, 'config reloaded');
      if (summary.ignoredSettings.length > 0) {
        logger.warn(
          { settings: summary.ignoredSettings },
          `config reload: ${summary.ignoredSettings.join(', ')} changed but take effect only after a restart`,
        );
      }
      this.options.onApplied?.(config);
      return true;
    } catch (err) {
      logger.error(
        { trigger, file, err: (err as Error).message },
        `config reload failed, previous config stays in force: ${(err as Error).message}`,
      );
      metrics?.reload('failed');
      return false;
    }
  }
}

function digestOf(file: string): string | undefined {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return undefined;
  }
}
