/**
 * What `check-config` says about an adapter engine beyond reachability: which database and table
 * it reads, and the backend's findings (a GIN index serving the search, or the one to create).
 */
import type { EngineConfig } from '../core/config/schema.js';
import { adapterOf } from './engine-config.js';
import { openAdapter } from './open.js';

export function adapterTarget(engine: EngineConfig): string {
  const adapter = adapterOf(engine);
  return adapter.kind === 'sqlite' ? `sqlite ${adapter.path} (${adapter.table})` : `postgres ${adapter.table}`;
}

/** The backend's notes as `level: message` lines; a database that cannot be opened yields none. */
export async function adapterNotes(engine: EngineConfig): Promise<string[]> {
  const opened = await openAdapter(adapterOf(engine), engine.cwd ?? process.cwd()).catch(() => undefined);
  if (!opened) return [];
  await opened.close();
  return opened.notes.map((note) => `${note.level}: ${note.message}`);
}
