/**
 * What the console suites share: a gateway with the console on, two bundled BM25 demo engines
 * over stdio and one HTTP test engine that carries a credential in its config (so every console
 * answer can be searched for it) and a breaker that opens after a couple of failures.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, startGateway, startHttpEngine, type EngineHandle, type GatewayHandle } from '../support/processes.js';

/** Stands for an engine credential: no console answer may ever contain it. */
export const ENGINE_SECRET = 'console-test-secret-7f3a9c';
export const ARTIFACTS = path.join(REPO_ROOT, 'test/console/artifacts');

/** Debian's package puts the browser here; CHROMIUM_PATH overrides. */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
  return candidates.find((file) => existsSync(file));
}

export function artifactsDir(): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return ARTIFACTS;
}

function demoEngine(id: string, view: string): Record<string, unknown> {
  return {
    id,
    transport: 'stdio',
    command: [process.execPath, path.join(REPO_ROOT, 'dist/demo/bm25/main.js'), '--view', view, '--name', `cranfield-${id}`],
    required: false,
  };
}

export interface ConsoleFixture {
  gateway: GatewayHandle;
  /** The HTTP engine the tests stop and start again. */
  flaky: EngineHandle;
  /** Its port, kept when it is started again. */
  flakyPort: number;
  /** Base URL of the console (`http://127.0.0.1:PORT/console`). */
  consoleUrl: string;
  restartFlaky(): Promise<void>;
  stop(): Promise<void>;
}

export async function startConsoleFixture(consoleEnabled = true): Promise<ConsoleFixture> {
  const flakyArgs = ['--id', 'flaky', '--id-prefix', 'flaky-', '--delay-ms', '0'];
  let flaky = await startHttpEngine(flakyArgs);
  const flakyPort = flaky.port;
  const gateway = await startGateway({
    config: {
      engines: [
        demoEngine('titles', 'title'),
        demoEngine('abstracts', 'body'),
        {
          id: 'flaky',
          transport: 'http',
          url: flaky.url,
          headers: { authorization: `Bearer ${ENGINE_SECRET}` },
          required: false,
          breaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutMs: 400, maxResetTimeoutMs: 800 },
        },
      ],
      gateway: {
        console: { enabled: consoleEnabled },
        deadlineMs: 5_000,
        restartDelayMs: 100,
        restartMaxDelayMs: 400,
        retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 },
      },
    },
  });
  const fixture: ConsoleFixture = {
    gateway,
    get flaky() {
      return flaky;
    },
    flakyPort,
    consoleUrl: gateway.url.replace(/\/rcp$/, '/console'),
    restartFlaky: async () => {
      flaky = await startHttpEngine([...flakyArgs, '--port', String(flakyPort)]);
    },
    stop: async () => {
      await gateway.stop();
      await flaky.stop();
    },
  };
  return fixture;
}
