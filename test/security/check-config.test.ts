/**
 * `rcp-gateway check-config` warns when engines declared over different corpora share an id
 * space (§16.3: their hits would merge whenever ids coincide), and is quiet once each corpus has
 * its own `idSpace`.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { GATEWAY_CLI, tmpDir, writeConfig } from '../support/processes.js';

function checkConfig(engines: object[]): { status: number | null; stderr: string; json: Record<string, unknown> } {
  const file = writeConfig(tmpDir('rcp-idspace-'), { engines });
  const text = spawnSync(process.execPath, [GATEWAY_CLI, 'check-config', '--config', file, '--no-probe'], { encoding: 'utf8' });
  const json = spawnSync(process.execPath, [GATEWAY_CLI, 'check-config', '--config', file, '--no-probe', '--json'], { encoding: 'utf8' });
  return { status: text.status, stderr: text.stderr, json: JSON.parse(json.stdout) as Record<string, unknown> };
}

const engine = (id: string, extra: object): object => ({ id, transport: 'http', url: `http://127.0.0.1:1/${id}`, ...extra });

describe('check-config and id spaces', () => {
  it('warns when engines over different corpora share an id space', () => {
    const out = checkConfig([engine('papers', { corpus: 'papers' }), engine('tickets', { corpus: 'tickets' })]);
    expect(out.status).toBe(0);
    expect(out.stderr).toMatch(/warning: engines papers \(papers\), tickets \(tickets\) search different corpora but share the id space/);
    expect(out.json.warnings).toHaveLength(1);
  });

  it('is quiet when each corpus has its own idSpace, or engines share one corpus', () => {
    const apart = checkConfig([
      engine('papers', { corpus: 'papers', idSpace: 'papers' }),
      engine('tickets', { corpus: 'tickets', idSpace: 'tickets' }),
    ]);
    expect(apart.stderr).not.toMatch(/warning/);
    expect(apart.json.warnings).toBeUndefined();
    const together = checkConfig([engine('titles', { corpus: 'cranfield' }), engine('abstracts', { corpus: 'cranfield' })]);
    expect(together.stderr).not.toMatch(/warning/);
  });
});
