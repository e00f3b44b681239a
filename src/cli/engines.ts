/**
 * `rcp-gateway engines`: live engine state of a running gateway, read through its own
 * `catalog/list` (§7.13), whose per-engine `_meta` carries status, breaker and queue depth.
 * Exit codes: 0 answered, 1 unreachable or an error answer, 2 usage.
 */
import { parseArgs } from 'node:util';
import { renderTable } from './table.js';

const ENGINES_HELP = `rcp-gateway engines [--url URL] [--header "Name: value"]... [--timeout MS] [--json]

Shows the live state of a running gateway's engines (catalog/list): status, circuit breaker,
queue depth, weight, priority, required, advertised capabilities, last error.
  --url URL       the gateway's RCP base URL (default: $RCPGW_URL, then http://127.0.0.1:8787/rcp)
  --header H      extra request header, e.g. "Authorization: Bearer …" (repeatable)
  --timeout MS    give up after MS milliseconds (default 5000)
  --json          print the catalog/list result as JSON

Exit status: 0 the gateway answered, 1 it could not be reached or answered an error, 2 usage.
`;

const DEFAULT_URL = 'http://127.0.0.1:8787/rcp';

interface CatalogEntry {
  id?: unknown;
  capabilities?: unknown;
  _meta?: Record<string, unknown>;
}

interface EnginesRequest {
  base: string;
  headers: Record<string, string>;
  timeoutMs: number;
  json: boolean;
}

type Reply = { result?: { engines?: unknown }; error?: { code: number; message: string } };

export async function engines(argv: string[]): Promise<number> {
  const request = parseEnginesArgs(argv);
  if (typeof request === 'number') return request;
  const reply = await fetchCatalog(request);
  if (typeof reply === 'number') return reply;
  if (reply.error) {
    process.stderr.write(`rcp-gateway engines: catalog/list failed: ${reply.error.code} ${reply.error.message}\n`);
    return 1;
  }
  if (request.json) {
    process.stdout.write(`${JSON.stringify(reply.result, null, 2)}\n`);
    return 0;
  }
  const list = Array.isArray(reply.result?.engines) ? (reply.result.engines as CatalogEntry[]) : [];
  process.stdout.write(engineTable(list));
  return 0;
}

/** The command line as a request, or the exit code when it is not usable (help: 0, usage: 2). */
function parseEnginesArgs(argv: string[]): EnginesRequest | number {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        url: { type: 'string' },
        header: { type: 'string', multiple: true },
        timeout: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    process.stderr.write(`rcp-gateway engines: ${(err as Error).message}\n\n${ENGINES_HELP}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(ENGINES_HELP);
    return 0;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const header of values.header ?? []) {
    const at = header.indexOf(':');
    if (at <= 0) {
      process.stderr.write(`rcp-gateway engines: invalid --header "${header}" (expected "Name: value")\n`);
      return 2;
    }
    headers[header.slice(0, at).trim().toLowerCase()] = header.slice(at + 1).trim();
  }
  const timeoutMs = values.timeout === undefined ? 5_000 : Number(values.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
    process.stderr.write(`rcp-gateway engines: invalid --timeout "${values.timeout}"\n`);
    return 2;
  }
  const base = (values.url ?? process.env.RCPGW_URL ?? DEFAULT_URL).replace(/\/+$/, '');
  return { base, headers, timeoutMs, json: values.json ?? false };
}

/** The gateway's JSON-RPC answer to catalog/list, or exit code 1 when there is none. */
async function fetchCatalog({ base, headers, timeoutMs }: EnginesRequest): Promise<Reply | number> {
  try {
    const response = await fetch(`${base}/catalog/list`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'catalog/list', params: {} }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    try {
      return JSON.parse(text) as Reply;
    } catch {
      process.stderr.write(`rcp-gateway engines: ${base}/catalog/list answered HTTP ${response.status} without JSON\n`);
      return 1;
    }
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    process.stderr.write(`rcp-gateway engines: cannot reach ${base}: ${(err as Error).message}${cause ? ` (${cause})` : ''}\n`);
    return 1;
  }
}

function engineTable(list: readonly CatalogEntry[]): string {
  return renderTable(
    ['ENGINE', 'STATUS', 'BREAKER', 'QUEUE', 'WEIGHT', 'PRIORITY', 'REQUIRED', 'CAPABILITIES', 'LAST ERROR'],
    list.map((entry) => {
      const meta = entry._meta ?? {};
      const caps = entry.capabilities && typeof entry.capabilities === 'object' ? Object.keys(entry.capabilities) : [];
      return [
        String(entry.id ?? '?'),
        text(meta.status),
        text(meta.breaker),
        text(meta.queueDepth),
        text(meta.weight),
        text(meta.priority),
        text(meta.required),
        caps.length > 0 ? caps.join(',') : '-',
        typeof meta.lastError === 'string' ? meta.lastError.slice(0, 120) : '-',
      ];
    }),
  );
}

function text(value: unknown): string {
  return value === undefined || value === null ? '-' : String(value);
}
