/**
 * Memory per open SSE stream: `streams` concurrent SSE `retrieve` calls held open by the engines
 * (each leg has sent one progress frame, the gateway has relayed it), the gateway's RSS read
 * from /proc before and while they are open, each after a full GC; per stream = ΔRSS / streams. Then the engines are
 * released and every stream must end with a real answer.
 */
import http from 'node:http';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { rssBytes } from './procs.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** One SSE request; resolves `firstData` on the first bytes and `done` with the whole body. */
function openStream(url, body, agent) {
  let onFirst;
  const firstData = new Promise((resolve) => {
    onFirst = resolve;
  });
  const done = new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
          onFirst();
        });
        res.on('end', () => resolve(text));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  return { firstData, done };
}

/**
 * The gateway's memory after a full collection: SIGUSR2 makes bench/lib/gc-hook.js collect and
 * write process.memoryUsage() to `memFile`; RSS is then read from /proc a few times once it has
 * settled (median), and the live heap (heapUsed + external) is taken from the hook's report.
 */
async function collected(pid, memFile) {
  rmSync(memFile, { force: true });
  process.kill(pid, 'SIGUSR2');
  await until(() => existsSync(memFile), 10_000, "the gateway's memory report");
  const usage = JSON.parse(readFileSync(memFile, 'utf8'));
  const samples = [];
  for (let i = 0; i < 5; i++) {
    await sleep(100);
    samples.push(rssBytes(pid));
  }
  samples.sort((a, b) => a - b);
  return { rss: samples[2], live: usage.heapUsed + usage.external };
}

export async function sseMemory({ gatewayUrl, gatewayPid, memFile, engines, engineCount, streams }) {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'retrieve',
    params: { query: 'rank fusion', k: 10, _meta: { progressToken: 'mem' } },
  });
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const before = await collected(gatewayPid, memFile);
  engines.hold(true);
  const open = [];
  let first = 0;
  // A stream that fails while the others are still opening is reported, not left as an unhandled rejection.
  let failed;
  for (let i = 0; i < streams; i++) {
    const stream = openStream(`${gatewayUrl}/retrieve`, body, agent);
    stream.firstData.then(() => first++);
    stream.done.catch((err) => {
      failed ??= err;
    });
    open.push(stream);
  }
  await until(
    async () => {
      if (failed) throw new Error(`a stream failed while ${streams} were being opened: ${failed.message}`);
      return first === streams && (await engines.held()) === streams * engineCount;
    },
    60_000,
    `${streams} open streams (${first} relayed a frame)`,
  );
  const during = await collected(gatewayPid, memFile);
  engines.release();
  const bodies = await Promise.all(open.map((stream) => stream.done));
  agent.destroy();
  const complete = bodies.filter((text) => text.includes('"hits":[{') && !text.includes('"degraded"')).length;
  if (complete !== streams) throw new Error(`only ${complete} of ${streams} streams ended with a full answer`);
  return {
    streams,
    before: before.rss,
    during: during.rss,
    perStream: (during.rss - before.rss) / streams,
    livePerStream: (during.live - before.live) / streams,
  };
}
