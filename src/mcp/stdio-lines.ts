/**
 * The line gate in front of the MCP SDK's stdio transport: every line the client writes is read
 * here first, and only a well-formed JSON-RPC message goes on to the SDK. The SDK's own reader
 * skips a line that is not JSON and drops a message its schemas refuse, answering neither, so a
 * client that sent a request with a usable id waited for ever; and a line past its 10 MiB buffer
 * closed the whole connection. Here (JSON-RPC 2.0 §5.1):
 *
 * - a line longer than `maxLineBytes` (the gateway's `maxBodyBytes`, as for every other way in)
 *   is answered -32013 with id null and skipped to its newline; the connection carries on;
 * - a line that is not JSON is answered -32700, id null;
 * - a message that is not a JSON-RPC 2.0 request, notification or response (a batch, a
 *   non-object, another version, a method that is not a string, an id that is neither a string
 *   nor an integer, params or a progress token of the wrong type) is answered -32600, with its
 *   id when that id is usable, else null.
 *
 * Answers are whole lines written to the same output as the SDK's, so the two never interleave
 * inside a line.
 */
import { Transform, type TransformCallback, type Writable } from 'node:stream';
import { isJsonObject } from '../core/protocol/jsonrpc.js';

const NEWLINE = 0x0a;

export function mcpLineGate(output: Writable, maxLineBytes: number): Transform {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** Inside a line already refused as too long: drop bytes until its newline. */
  let skipping = false;

  const answer = (id: string | number | null, code: number, message: string): void => {
    output.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
  };
  const tooLong = (): void => answer(null, -32013, `message exceeds ${maxLineBytes} bytes (gateway.maxBodyBytes)`);

  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      let start = 0;
      for (let end = chunk.indexOf(NEWLINE); end >= 0; end = chunk.indexOf(NEWLINE, start)) {
        const piece = chunk.subarray(start, end);
        start = end + 1;
        if (skipping) {
          skipping = false;
          continue;
        }
        if (pendingBytes + piece.length > maxLineBytes) {
          tooLong();
        } else {
          const line = (pending.length === 0 ? piece : Buffer.concat([...pending, piece])).toString('utf8');
          const forward = checkLine(line, answer);
          if (forward !== undefined) this.push(`${forward}\n`);
        }
        pending = [];
        pendingBytes = 0;
      }
      const rest = chunk.subarray(start);
      if (!skipping && rest.length > 0) {
        if (pendingBytes + rest.length > maxLineBytes) {
          tooLong();
          skipping = true;
          pending = [];
          pendingBytes = 0;
        } else {
          pending.push(rest);
          pendingBytes += rest.length;
        }
      }
      done();
    },
  });
}

/** The line to hand on, or undefined when it was answered here (or is blank). */
function checkLine(raw: string, answer: (id: string | number | null, code: number, message: string) => void): string | undefined {
  const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  if (line.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    answer(null, -32700, 'Parse error: the line is not JSON');
    return undefined;
  }
  const problem = messageProblem(value);
  if (problem === undefined) return line;
  const id = isJsonObject(value) && isUsableId(value.id) ? value.id : null;
  answer(id, -32600, `Invalid Request: ${problem}`);
  return undefined;
}

/**
 * Not jsonrpc.ts `classify`: that one holds method names to RCP's grammar (§4.1), which MCP's
 * (`logging/setLevel`) do not follow, and takes ids MCP refuses (1.5) and no progress token.
 */
function messageProblem(value: unknown): string | undefined {
  if (Array.isArray(value)) return 'batches are not supported';
  if (!isJsonObject(value)) return 'a message must be a JSON object';
  if (value.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if ('id' in value && !isUsableId(value.id)) return 'id must be a string or an integer';
  if (!('method' in value)) return 'id' in value ? undefined : 'a message needs a method or an id'; // a response
  if (typeof value.method !== 'string') return 'method must be a string';
  if (!('params' in value)) return undefined;
  if (!isJsonObject(value.params)) return 'params must be an object';
  const meta = value.params._meta;
  if (meta === undefined) return undefined;
  if (!isJsonObject(meta)) return 'params._meta must be an object';
  if ('progressToken' in meta && !isUsableId(meta.progressToken)) return 'params._meta.progressToken must be a string or an integer';
  return undefined;
}

function isUsableId(id: unknown): id is string | number {
  return typeof id === 'string' || Number.isSafeInteger(id);
}
