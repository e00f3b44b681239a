/**
 * Shared pieces of the routing suites: test engines with chosen capabilities, a gateway over
 * them, and cleanup. Every process is real (test engines over HTTP, the gateway from dist/).
 */
import path from 'node:path';
import { rpc, type RpcReply } from '../support/http-client.js';
import {
  readEvents,
  startGateway,
  startHttpEngine,
  tmpDir,
  writeControl,
  type EngineEvent,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';

export type Caps = Record<string, Record<string, unknown>>;

export interface TestEngine extends EngineHandle {
  id: string;
  /** The engine's `--control` file (faults at runtime). */
  control: string;
  /** Requests this engine received for `method`, in order. */
  requests(method: string): EngineEvent[];
}

export class Fleet {
  private readonly cleanups: Array<() => Promise<unknown>> = [];

  async engine(id: string, caps: Caps, extra: string[] = []): Promise<TestEngine> {
    const control = path.join(tmpDir('rcp-route-'), 'control.json');
    writeControl(control, { fault: 'ok' });
    const handle = await startHttpEngine(['--id', id, '--caps', JSON.stringify(caps), '--control', control, ...extra]);
    this.cleanups.push(() => handle.stop());
    return {
      ...handle,
      id,
      control,
      requests: (method) => readEvents(handle.eventsFile).filter((e) => e.ev === 'request' && e.method === method),
    };
  }

  async gateway(
    engines: ReadonlyArray<{ engine: TestEngine } & Record<string, unknown>>,
    gateway: Record<string, unknown> = {},
  ): Promise<GatewayHandle> {
    const config = {
      engines: engines.map(({ engine, ...rest }) => ({ id: engine.id, transport: 'http', url: engine.url, ...rest })),
      gateway: { logLevel: 'warn', ...gateway },
    };
    const handle = await startGateway({ config });
    this.cleanups.push(() => handle.stop());
    return handle;
  }

  async stop(): Promise<void> {
    for (const cleanup of this.cleanups.reverse()) await cleanup();
  }
}

/** What a routed answer says about who served it. */
export interface RoutedMeta {
  engine: string;
  routedBy: string;
  failedOver?: Array<{ engine: string; code: number; reason: string }>;
  writes?: Array<{ engine: string; ok: boolean; code?: number }>;
  partial?: boolean;
}

export function metaOf(reply: RpcReply): RoutedMeta {
  return (reply.result?._meta ?? {}) as RoutedMeta;
}

export function errorOf(reply: RpcReply): { code: number; data: Record<string, unknown> } {
  if (!reply.error) throw new Error(`expected an error, got ${JSON.stringify(reply.result).slice(0, 300)}`);
  return { code: reply.error.code, data: (reply.error.data ?? {}) as Record<string, unknown> };
}

export { rpc };

/** A retrieve-capable test engine's default capabilities plus `extra`. */
export function withRetrieve(extra: Caps = {}): Caps {
  return { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 }, ...extra };
}
