/**
 * Several gateway replicas as a cluster runs them: separate processes on ports of their own,
 * the same config delivered to each through a ConfigMap-style volume (so a config roll is the
 * kubelet's `..data` swap), the cursor key from the environment (a Secret), and a replica can be
 * stopped with SIGTERM and started again on the same port. Plus a bounded load client that
 * records every answer and which replica gave it.
 */
import path from 'node:path';
import { fetch } from 'undici';
import { recordEmitted } from '../../support/spec-validator.js';
import { startGateway, tmpDir, type GatewayHandle } from '../../support/processes.js';
import { freePort } from './ports.js';
import { createConfigMapVolume, updateConfigMapVolume } from './configmap-volume.js';

/** One key for every replica, as a Kubernetes Secret would hand it to each pod. */
export const CURSOR_SECRET = 'replica-set-test-cursor-secret-0123456789';

export interface Replica {
  readonly index: number;
  readonly port: number;
  readonly configDir: string;
  /** The running process (undefined while stopped). */
  handle: GatewayHandle | undefined;
  url(): string;
}

export class ReplicaSet {
  readonly replicas: Replica[] = [];

  private constructor(private readonly env: NodeJS.ProcessEnv) {}

  /** `count` replicas of `config`, each started and listening. */
  static async start(count: number, config: unknown): Promise<ReplicaSet> {
    const set = new ReplicaSet({ ...process.env, RCPGW_LOG_FORMAT: 'json', RCPGW_CURSOR_SECRET: CURSOR_SECRET });
    const root = tmpDir('rcp-replicas-');
    for (let index = 0; index < count; index++) {
      const port = await freePort('127.0.0.1');
      const configDir = path.join(root, `replica-${index + 1}`, 'config');
      createConfigMapVolume(configDir, { 'config.json': JSON.stringify(config, null, 2) });
      set.replicas.push({ index, port, configDir, handle: undefined, url: () => `http://127.0.0.1:${port}/rcp` });
    }
    await Promise.all(set.replicas.map((replica) => set.startReplica(replica)));
    return set;
  }

  /** Addresses in replica order (the balancer's servers gw1, gw2, …). */
  addresses(): string[] {
    return this.replicas.map((replica) => `127.0.0.1:${replica.port}`);
  }

  async startReplica(replica: Replica): Promise<GatewayHandle> {
    replica.handle = await startGateway({
      configFile: path.join(replica.configDir, 'config.json'),
      args: ['--port', String(replica.port)],
      env: this.env,
      // Generous: on a loaded machine a Node start alone can take seconds.
      timeoutMs: 60_000,
    });
    return replica.handle;
  }

  /** SIGTERM; resolves with the exit code once the process is gone. */
  async stopReplica(replica: Replica): Promise<number | null> {
    const handle = replica.handle;
    if (!handle) return null;
    const exited = new Promise<number | null>((resolve) => handle.proc.once('exit', (code) => resolve(code)));
    handle.proc.kill('SIGTERM');
    const code = await exited;
    replica.handle = undefined;
    return code;
  }

  /** Deliver a new config to one replica the way the kubelet updates a ConfigMap volume. */
  rollConfig(replica: Replica, config: unknown): void {
    updateConfigMapVolume(replica.configDir, { 'config.json': JSON.stringify(config, null, 2) });
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => (replica.handle ? replica.handle.stop() : undefined)));
  }
}

/** One answer as the client saw it. */
export interface Answer {
  id: string;
  query: string;
  status: number;
  servedBy: string | undefined;
  /** The id the JSON-RPC response carried. */
  answeredId: unknown;
  hitIds: string[];
  error?: string;
  sentAt: number;
}

export interface Load {
  readonly answers: Answer[];
  /** Stop sending; resolves once every request in flight was answered. */
  stop(): Promise<Answer[]>;
}

/**
 * `concurrency` clients sending retrieves through `url` until stopped, each request with a unique
 * id and a unique query token (`<tag><n>`; give each load its own tag) so the engines' logs show
 * how often each was executed.
 * Bounded: at most `maxRequests` and `maxMs`, then it stops by itself.
 */
export function startLoad(
  url: string,
  options: { tag: string; concurrency: number; pauseMs: number; maxRequests?: number; maxMs?: number },
): Load {
  const answers: Answer[] = [];
  const maxRequests = options.maxRequests ?? 20_000;
  const stopAt = Date.now() + (options.maxMs ?? 120_000);
  let sent = 0;
  let running = true;
  const loops = Array.from({ length: options.concurrency }, async () => {
    while (running && sent < maxRequests && Date.now() < stopAt) {
      const n = ++sent;
      answers.push(await retrieveThrough(url, `${options.tag}-${n}`, `retrieval fusion ranking ${options.tag}${n}`));
      if (options.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  });
  return {
    answers,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return answers;
    },
  };
}

/** One retrieve, recorded as an Answer (never throws: a transport failure is an answer too). */
export async function retrieveThrough(url: string, id: string, query: string): Promise<Answer> {
  const sentAt = Date.now();
  const base = { id, query, sentAt, answeredId: undefined, hitIds: [] as string[] };
  try {
    const res = await fetch(`${url}/retrieve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'retrieve', params: { query, k: 4 } }),
    });
    const servedBy = res.headers.get('x-served-by') ?? undefined;
    const text = await res.text();
    let frame: { id?: unknown; result?: { hits?: Array<{ id: string }> }; error?: { code: number; message: string } };
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return { ...base, status: res.status, servedBy, error: `not JSON: ${text.slice(0, 200)}` };
    }
    recordEmitted(frame, 'retrieve');
    const error = frame.error ? `${frame.error.code} ${frame.error.message}` : res.status !== 200 ? `HTTP ${res.status}` : undefined;
    return {
      ...base,
      status: res.status,
      servedBy,
      answeredId: frame.id,
      hitIds: (frame.result?.hits ?? []).map((h) => h.id),
      ...(error ? { error } : {}),
    };
  } catch (err) {
    return { ...base, status: 0, servedBy: undefined, error: `transport: ${(err as Error).message}` };
  }
}
