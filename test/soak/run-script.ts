/**
 * Runs a bench script from the repository root to completion, capturing stdout and stderr
 * together (the smoke suites check what it printed, never how fast).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../support/processes.js';

export async function runScript(script: string, args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, script), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const append = (chunk: string): void => {
    out += chunk;
  };
  child.stdout.setEncoding('utf8').on('data', append);
  child.stderr.setEncoding('utf8').on('data', append);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, out };
}
