/**
 * Tool argument schemas: zod describes them once; the JSON Schema a model reads in `tools/list`
 * comes from zod, and validation runs in the tool handler through the gateway's own
 * `parseParams`, so a bad argument is an RCP -32602 naming the field (§12.1 `data.field`) like
 * every other failure the facade reports — not the SDK's generic "Input validation error".
 */
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { parseParams } from '../../core/protocol/params.js';
import { isJsonObject } from '../../core/protocol/jsonrpc.js';
import { RcpError } from '../../core/protocol/errors.js';

/**
 * The schema as the SDK sees it: zod's JSON Schema for `tools/list`, and a validator that lets
 * every value through to the handler (which parses it with `parseArguments`).
 */
export function advertised(schema: z.ZodType): StandardSchemaWithJSON<unknown, unknown> {
  const standard = schema['~standard'];
  return {
    '~standard': {
      version: 1,
      vendor: 'rcp-gateway',
      validate: (value: unknown) => ({ value }),
      jsonSchema: standard.jsonSchema,
    },
  };
}

/** Parse tool arguments; throws RcpError -32602 with the offending field. */
export function parseArguments<T extends z.ZodType>(schema: T, args: unknown): z.infer<T> {
  if (args === undefined || args === null) return parseParams(schema, {});
  if (!isJsonObject(args)) throw RcpError.invalidParams('(arguments)', 'must be an object');
  return parseParams(schema, args);
}
