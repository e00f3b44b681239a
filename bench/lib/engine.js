#!/usr/bin/env node
/**
 * Fast fixed RCP engines for the benchmark: one process hosts `--count` HTTP engines (one port
 * each) that answer `retrieve` with a canned 20-hit result whose bytes are computed once at
 * start. The only per-request work is reading the body and splicing the request id (and, for
 * SSE, the progress token) between precomputed byte slices, so the engines stay far cheaper
 * than whatever sits in front of them.
 *
 *   node bench/lib/engine.js --count 3 [--host 127.0.0.1] [--frames 3] [--hits 20]
 *
 * Started with an IPC channel (child_process.fork) it reports `{type:'listening', ports}` and
 * takes commands: `{type:'hold', on}` (SSE streams send one progress frame, then stay open),
 * `{type:'release'}` (finish every held stream), `{type:'held?'}` → `{type:'held', count}`.
 * Without IPC it prints `{"listening":[ports]}` on stdout.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { cannedHits } from './canned-hits.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '1' },
    host: { type: 'string', default: '127.0.0.1' },
    frames: { type: 'string', default: '3' },
    /** Hits in every answer (the scaling bench varies it with k). */
    hits: { type: 'string', default: '20' },
  },
});
const COUNT = Number(values.count);
const FRAMES = Number(values.frames);
const HITS = Number(values.hits);

const CAPS = { retrieve: { maxK: Math.max(100, HITS), modes: ['sparse'] }, streaming: {} };
const ID_HEAD = Buffer.from('{"jsonrpc":"2.0","id":');

/** Precomputed answer bytes for one engine; `id` is spliced between `head` and the tail. */
function answers(e) {
  const result = { hits: cannedHits(e, HITS), usage: { candidates: HITS } };
  const retrieveTail = Buffer.from(`,"result":${JSON.stringify(result)}}`);
  const initTail = Buffer.from(
    `,"result":${JSON.stringify({ protocolVersion: 1, server: { name: `bench-engine-${e}`, version: '1' }, capabilities: CAPS })}}`,
  );
  const emptyTail = Buffer.from(',"result":{}}');
  const unknownTail = Buffer.from(',"error":{"code":-32004,"message":"unknown method"}}');
  const progress = [];
  for (let f = 1; f <= FRAMES; f++) {
    const fraction = Number((f / (FRAMES + 1)).toFixed(3));
    progress.push(`,"progress":${fraction},"stage":"recall","message":"frame ${f} of ${FRAMES}"}}\n\n`);
  }
  return { retrieveTail, initTail, emptyTail, unknownTail, progress };
}

/** The raw JSON text of the top-level value after `"key":` in `body` (a number or a string). */
function rawValueAfter(body, key) {
  const at = body.indexOf(key);
  if (at < 0) return undefined;
  let i = at + key.length;
  while (body[i] === ' ') i++;
  if (body[i] === '"') {
    let j = i + 1;
    while (j < body.length && body[j] !== '"') j += body[j] === '\\' ? 2 : 1;
    return body.slice(i, j + 1);
  }
  let j = i;
  while (j < body.length && body[j] !== ',' && body[j] !== '}' && body[j] !== ' ') j++;
  return body.slice(i, j);
}

let hold = false;
const held = new Set();

function finishSse(stream) {
  const { res, token, id, canned, from } = stream;
  for (let f = from; f < canned.progress.length; f++) {
    res.write(`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${token}${canned.progress[f]}`);
  }
  res.end(Buffer.concat([Buffer.from('data: '), ID_HEAD, Buffer.from(id), canned.retrieveTail, Buffer.from('\n\n')]));
}

function handler(canned) {
  return (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0].toString('latin1') : Buffer.concat(chunks).toString('latin1');
      const method = req.url.slice(req.url.lastIndexOf('/') + 1);
      const id = rawValueAfter(body, '"id":');
      if (id === undefined) {
        res.writeHead(204).end(); // a notification: nothing to answer
        return;
      }
      if (method === 'retrieve' && (req.headers.accept ?? '').includes('text/event-stream')) {
        const token = rawValueAfter(body, '"progressToken":') ?? '0';
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const stream = { res, token, id, canned, from: 0 };
        if (hold) {
          res.write(`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${token}${canned.progress[0]}`);
          stream.from = 1;
          held.add(stream);
          res.once('close', () => held.delete(stream));
          return;
        }
        finishSse(stream);
        return;
      }
      const tail =
        method === 'retrieve'
          ? canned.retrieveTail
          : method === 'initialize'
            ? canned.initTail
            : method === 'ping'
              ? canned.emptyTail
              : canned.unknownTail;
      const out = Buffer.concat([ID_HEAD, Buffer.from(id, 'latin1'), tail]);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': out.length });
      res.end(out);
    });
  };
}

const ports = [];
for (let e = 0; e < COUNT; e++) {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, handler(answers(e)));
  server.maxHeadersCount = 0;
  await new Promise((resolve) => server.listen(0, values.host, resolve));
  ports.push(server.address().port);
}

if (process.send) {
  process.on('message', (message) => {
    if (message.type === 'hold') hold = Boolean(message.on);
    else if (message.type === 'release') {
      hold = false;
      for (const stream of held) finishSse(stream);
      held.clear();
    } else if (message.type === 'held?') process.send({ type: 'held', count: held.size });
  });
  process.on('disconnect', () => process.exit(0));
  process.send({ type: 'listening', ports });
} else {
  process.stdout.write(`${JSON.stringify({ listening: ports })}\n`);
}
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
