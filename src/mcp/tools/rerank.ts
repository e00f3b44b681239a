/**
 * `rerank` (registered only while the gateway advertises `rerank`, §7.6): the gateway routes the
 * call to one engine offering it. A model uses it to order passages it already holds — from
 * several searches, or from other tools — by relevance to a query, with a cross-encoder rather
 * than its own guess. `embed` is deliberately not a tool: a vector is useless in a model's
 * context (nothing it can compare it with, and hundreds of floats of tokens).
 */
import type { CallToolResult, McpServer, RegisteredTool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { positiveInt, stringArray } from '../../core/protocol/capabilities.js';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import { callRcp, type ToolEnv } from './call.js';
import { thrownToolError, toolError } from './errors.js';
import { advertised, parseArguments } from './schema.js';

export function rerankInputSchema(env: ToolEnv) {
  const cap = env.catalog.capabilities.rerank ?? {};
  const maxCandidates = positiveInt(cap.maxCandidates);
  const methods = stringArray(cap.methods);
  const passages = z.array(z.string().min(1)).min(1);
  return z.object({
    query: z.string().min(1).describe('The query the passages should answer.'),
    passages: (maxCandidates !== undefined ? passages.meta({ maxItems: maxCandidates }) : passages).describe(
      `The passages to order${maxCandidates !== undefined ? ` (at most ${maxCandidates})` : ''}.`,
    ),
    topN: z.int().min(1).optional().describe('Return only the best N (default: all).'),
    ...(methods.length > 1
      ? {
          method: z
            .enum(methods as [string, ...string[]])
            .optional()
            .describe('The reranking method.'),
        }
      : {}),
  });
}

export const RerankOutputSchema = z.object({
  ranking: z
    .array(z.object({ index: z.int().describe('Position of the passage in the input (0-based).'), score: z.number() }))
    .describe('Passages best first; scores are comparable only within this answer.'),
});

/** Registers the tool; its schema follows `env.catalog` (re-advertise with `update`, see tools/index.ts). */
export function registerRerank(server: McpServer, env: ToolEnv): RegisteredTool {
  return server.registerTool(
    'rerank',
    {
      title: 'Rerank passages',
      description: 'Order passages by relevance to a query with a reranking model of one of the engines behind this gateway.',
      inputSchema: advertised(rerankInputSchema(env)),
      outputSchema: RerankOutputSchema,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
    },
    async (args, ctx): Promise<CallToolResult> => {
      try {
        const input = parseArguments(rerankInputSchema(env), args);
        const params: JsonObject = { query: input.query, passages: input.passages };
        if (input.topN !== undefined) params.topN = input.topN;
        if ('method' in input && input.method !== undefined) params.method = input.method;
        const outcome = await callRcp(env, ctx, 'rerank', params);
        if (!outcome.ok) return toolError('rerank', outcome.error);
        const ranking = rankingOf(outcome.result, input.passages.length, input.topN);
        const text = ranking.map((r, i) => `${i + 1}. passage ${r.index} (score ${r.score})`).join('\n') || 'No scores were returned.';
        return { content: [{ type: 'text', text }], structuredContent: { ranking } };
      } catch (err) {
        return thrownToolError('rerank', err);
      }
    },
  );
}

/** Best-first (index, score) pairs: the engine's `order` when valid, else sorted by score (§7.6). */
function rankingOf(result: JsonObject, count: number, topN: number | undefined): Array<{ index: number; score: number }> {
  const scores = Array.isArray(result.scores) ? result.scores : [];
  const scoreOf = (index: number): number | undefined => {
    const value: unknown = scores[index];
    return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
  };
  const valid = (index: unknown): index is number =>
    Number.isInteger(index) && (index as number) >= 0 && (index as number) < count && scoreOf(index as number) !== undefined;
  let order = Array.isArray(result.order) ? result.order.filter(valid) : [];
  if (order.length === 0) {
    order = [...Array(count).keys()].filter(valid).sort((a, b) => scoreOf(b)! - scoreOf(a)! || a - b);
  }
  const ranking = [...new Set(order)].map((index) => ({ index, score: scoreOf(index)! }));
  return topN !== undefined ? ranking.slice(0, topN) : ranking;
}
