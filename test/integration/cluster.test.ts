/**
 * `serve --workers N`: workers share one port, each is a full gateway (its own stdio engines),
 * the primary prints one `listening on` line, replaces a worker that dies, stops cleanly on
 * SIGTERM, and refuses to start when a worker cannot.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { readEvents, startGateway, stdioEngineCommand, tmpDir, writeConfig, GATEWAY_CLI } from '../support/processes.js';
import { emittedErrors, recordEmitted, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';

afterAll(() => {
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

interface LogLine {
  msg?: string;
  pid?: number;
  worker?: number;
}
const logLines = (stderr: string): LogLine[] =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A retrieve on a connection of its own: the cluster hands connections to workers in turn. */
function retrieveOnNewConnection(
  url: string,
  params: Record<string, unknown>,
): Promise<{ result?: { hits: unknown[]; nextCursor?: string }; error?: { code: number; message: string } }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/retrieve`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (c: string) => {
            text += c;
          })
          .on('end', () => {
            const frame = JSON.parse(text) as Record<string, unknown>;
            recordEmitted(frame, 'retrieve');
            resolve(frame);
          });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('serve --workers', () => {
  it('shares one port across workers, restarts a dead worker, stops on SIGTERM', async () => {
    const events = path.join(tmpDir('rcp-cluster-'), 'events.ndjson');
    const gw = await startGateway({
      config: { engines: [{ id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local', '--events', events]) }] },
      args: ['--workers', '2'],
      env: { ...process.env, RCPGW_LOG_FORMAT: 'json' },
    });
    try {
      expect(gw.stderr().match(/listening on/g)).toHaveLength(1);
      expect(gw.stderr()).toContain('(2 workers)');
      // Each worker runs the whole serve path, so each started its own stdio engine.
      await until(() => readEvents(events).filter((e) => e.ev === 'start').length === 2, 'two engine starts');
      const answers = await Promise.all(
        [1, 2, 3, 4].map((id) => rpc<{ hits: unknown[] }>(gw.url, 'retrieve', { query: 'fusion ranking', k: 3 }, { id })),
      );
      for (const answer of answers) expect(answer.result?.hits.length).toBe(3);

      const started = logLines(gw.stderr()).filter((l) => l.msg === 'worker started');
      expect(started).toHaveLength(2);
      const victim = started[0]!.pid!;
      process.kill(victim, 'SIGKILL');
      await until(
        () => logLines(gw.stderr()).some((l) => l.msg === 'worker exited unexpectedly; restarting' && l.pid === victim),
        'restart log',
      );
      // The replacement is a full worker again: it started its own engine.
      await until(() => readEvents(events).filter((e) => e.ev === 'start').length === 3, 'a third engine start');
      await until(() => logLines(gw.stderr()).filter((l) => l.msg === 'worker started').length === 3, 'replacement worker');
      const after = await rpc<{ hits: unknown[] }>(gw.url, 'retrieve', { query: 'fusion', k: 2 });
      expect(after.result?.hits.length).toBe(2);

      const workers = logLines(gw.stderr())
        .filter((l) => l.msg === 'worker started')
        .map((l) => l.pid!)
        .filter((pid) => pid !== victim);
      expect(await gw.stop()).toBe(0);
      for (const pid of workers) expect(alive(pid)).toBe(false);
    } finally {
      await gw.stop();
    }
  });

  it('opens a cursor issued by one worker on every other (one shared key)', async () => {
    const gw = await startGateway({
      config: { engines: [{ id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local']) }] },
      args: ['--workers', '2'],
    });
    try {
      const query = { query: 'retrieval fusion ranking', k: 2 };
      const first = await retrieveOnNewConnection(gw.url, query);
      const cursor = first.result?.nextCursor;
      expect(typeof cursor).toBe('string');
      // Fresh connections alternate between the workers: every one must serve the next page.
      const pages = await Promise.all([1, 2, 3, 4, 5, 6].map(() => retrieveOnNewConnection(gw.url, { ...query, cursor })));
      for (const page of pages) {
        expect(page.error).toBeUndefined();
        expect(page.result?.hits.length).toBe(2);
      }
    } finally {
      await gw.stop();
    }
  });

  it('does not start when a worker cannot (a required engine is down)', async () => {
    const config = writeConfig(tmpDir('rcp-cluster-'), {
      engines: [{ id: 'gone', transport: 'http', url: 'http://127.0.0.1:9/rcp', required: true }],
    });
    const child = spawn(process.execPath, [GATEWAY_CLI, 'serve', '--config', config, '--port', '0', '--workers', '2'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('required engine(s) failed to start');
    expect(stderr).not.toContain('listening on');
  });

  it('rejects an invalid worker count', async () => {
    const config = writeConfig(tmpDir('rcp-cluster-'), { engines: [{ id: 'x', transport: 'http', url: 'http://127.0.0.1:9/rcp' }] });
    const child = spawn(process.execPath, [GATEWAY_CLI, 'serve', '--config', config, '--workers', 'many'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    expect(await new Promise<number | null>((resolve) => child.once('exit', resolve))).toBe(2);
    expect(stderr).toContain('invalid --workers "many"');
  });
});

schemaCrossCheck();
