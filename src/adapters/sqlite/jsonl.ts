/**
 * Documents from JSON lines, for `rcp-gateway adapter sqlite --index`: one object per line with
 * `id` (string or number) and `text`, optionally `title`, `uri`, a `meta` object; any other key
 * is metadata too. Inputs are files, folders (their `*.jsonl` files, sorted) or `-` for stdin.
 * A malformed line stops the build with its file and line number.
 */
import { createReadStream, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { IndexDocument } from './index-builder.js';

export class JsonlError extends Error {}

export function expandInputs(inputs: readonly string[]): string[] {
  return inputs.flatMap((input) => {
    if (input === '-' || !statSync(input).isDirectory()) return [input];
    return readdirSync(input)
      .filter((name) => name.endsWith('.jsonl'))
      .sort()
      .map((name) => join(input, name));
  });
}

export function toIndexDocument(value: unknown, where: string): IndexDocument {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new JsonlError(`${where}: expected a JSON object`);
  const { id, text, title, uri, meta, ...rest } = value as Record<string, unknown>;
  if (!(typeof id === 'string' && id !== '') && !(typeof id === 'number' && Number.isFinite(id)))
    throw new JsonlError(`${where}: "id" must be a non-empty string or a number`);
  if (typeof text !== 'string') throw new JsonlError(`${where}: "text" must be a string`);
  if (title !== undefined && typeof title !== 'string') throw new JsonlError(`${where}: "title" must be a string`);
  if (uri !== undefined && typeof uri !== 'string') throw new JsonlError(`${where}: "uri" must be a string`);
  if (meta !== undefined && (typeof meta !== 'object' || meta === null || Array.isArray(meta)))
    throw new JsonlError(`${where}: "meta" must be an object`);
  return { id: String(id), text, title, uri, meta: { ...rest, ...(meta as Record<string, unknown> | undefined) } };
}

export async function* readJsonl(inputs: readonly string[], stdin: Readable): AsyncGenerator<IndexDocument> {
  for (const input of expandInputs(inputs)) {
    const lines = createInterface({ input: input === '-' ? stdin : createReadStream(input, 'utf8'), crlfDelay: Infinity });
    let number = 0;
    for await (const line of lines) {
      number += 1;
      if (line.trim() === '') continue;
      const where = `${input === '-' ? 'stdin' : input}:${number}`;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (err) {
        throw new JsonlError(`${where}: ${(err as Error).message}`);
      }
      yield toIndexDocument(value, where);
    }
  }
}
