/**
 * RCP progress (§9) as MCP `notifications/progress`. The gateway's frames are already aggregated
 * over engines and monotone non-decreasing in [0, 1] (federation/progress.ts); MCP wants
 * `progress` to increase strictly on every notification for a token, so a frame that does not
 * move the value forward (a stage label from an engine still at the same point) is dropped.
 * The text of the frame ("2 of 3 engines answered; engine a answered") becomes the MCP
 * `message`, with the count of partial hits fused so far; the hits themselves stay in RCP
 * (MCP progress carries no payload).
 */
import type { ProgressUpdate } from '../core/service/contract.js';

export interface McpProgress {
  progress: number;
  total: number;
  message?: string;
}

/** A progress sink that turns RCP updates into strictly increasing MCP progress. */
export function mcpProgressRelay(send: (progress: McpProgress) => void): (update: ProgressUpdate) => void {
  let last = -Infinity;
  return (update) => {
    const value = update.progress;
    if (value === undefined || !Number.isFinite(value) || value <= last) return;
    last = value;
    send({ progress: value, total: 1, message: describe(update) });
  };
}

function describe(update: ProgressUpdate): string {
  const parts: string[] = [];
  if (update.message) parts.push(update.message);
  else if (update.stage) parts.push(update.stage);
  const hits = update.partial?.hits;
  if (Array.isArray(hits)) parts.push(`${hits.length} partial hit${hits.length === 1 ? '' : 's'} fused so far`);
  return parts.join('; ');
}
