#!/usr/bin/env node
/**
 * Entry of a bundled demo engine over stdio (§5.1): `node dist/demo/bm25/main.js --view title|body|all`.
 * stdout carries protocol frames only; diagnostics go to stderr.
 */
import { parseArgs } from 'node:util';
import { serveStdio } from '../../node/server/stdio.js';
import { BM25_VIEWS, type Bm25View } from './index.js';
import { createDemoEngineService } from './service.js';

const { values } = parseArgs({ options: { view: { type: 'string', default: 'body' }, name: { type: 'string' } } });
const view = values.view as Bm25View;
if (!BM25_VIEWS.includes(view)) {
  process.stderr.write(`unknown --view ${String(values.view)} (expected ${BM25_VIEWS.join(', ')})\n`);
  process.exit(2);
}
const service = createDemoEngineService(view, values.name ?? `cranfield-bm25-${view}`);
await serveStdio(service, { input: process.stdin, output: process.stdout });
// Flush the last answers before exiting (stdout to a pipe is asynchronous).
process.stdout.write('', () => process.exit(0));
