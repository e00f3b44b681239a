/**
 * Per-file process bookkeeping for integration suites: engines and gateways started through the
 * scope are stopped after the file (last started, first stopped), then the schema cross-check
 * banner is printed and every frame the gateway emitted must have validated.
 */
import { afterAll, expect } from 'vitest';
import { startGateway, startHttpEngine, type EngineHandle, type GatewayHandle, type GatewayOptions } from './processes.js';
import { emittedErrors, schemaCrossCheckBanner } from './spec-validator.js';

export interface SuiteProcesses {
  /** A test engine over HTTP (see startHttpEngine). */
  engine(args: string[]): Promise<EngineHandle>;
  /** The gateway from dist/cli/main.js on a config object. */
  gateway(config: unknown, options?: Omit<GatewayOptions, 'config'>): Promise<GatewayHandle>;
  /** Anything else to undo after the file. */
  defer(cleanup: () => Promise<unknown>): void;
}

export function suiteProcesses(): SuiteProcesses {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    console.log(schemaCrossCheckBanner());
    expect(emittedErrors()).toEqual([]);
  });
  return {
    async engine(args) {
      const handle = await startHttpEngine(args);
      cleanups.push(() => handle.stop());
      return handle;
    },
    async gateway(config, options = {}) {
      const handle = await startGateway({ ...options, config });
      cleanups.push(() => handle.stop());
      return handle;
    },
    defer(cleanup) {
      cleanups.push(cleanup);
    },
  };
}
