/**
 * `rcp-gateway eval` end to end on Cranfield with the bundled config (two BM25 engines and the SQLite FTS5 adapter). The
 * reference figures are computed exactly as test/core/default-config.test.ts computes them:
 * through a served gateway, one retrieve per query and arm. The command's in-process arms, its
 * --url mode against that gateway, and its run files read back with --run must all give the
 * same figures.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { evaluateRun, loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { ArmSchema } from '../../src/core/experiments/arms.js';
import { formatQrels, parseRun } from '../../src/evaluation/trec.js';
import { rpc } from '../support/http-client.js';
import { GATEWAY_CLI, REPO_ROOT, startGateway, tmpDir, type GatewayHandle } from '../support/processes.js';

interface Hit {
  id: string;
}
interface ArmJson {
  arm: string;
  means: Record<string, number>;
  failed: unknown[];
}
interface EvalJson {
  evaluated: number;
  arms: ArmJson[];
  comparisons: Array<{ arm: string; label: string; pRandomisation: number; pTTest: number }>;
}

const DEFAULT_CONFIG = path.join(REPO_ROOT, 'config/default.json');
const ARMS: Record<string, string[] | undefined> = { titles: ['titles'], abstracts: ['abstracts'], fused: undefined };
const dir = tmpDir('rcp-eval-cli-');
let gateway: GatewayHandle;
const reference = new Map<string, Map<string, string[]>>();

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [GATEWAY_CLI, 'eval', ...args], { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function means(json: EvalJson, arm: string): Record<string, number> {
  const found = json.arms.find((a) => a.arm === arm);
  if (!found) throw new Error(`no arm ${arm} in ${json.arms.map((a) => a.arm).join(', ')}`);
  expect(found.failed).toEqual([]);
  return found.means;
}

/** Resolves once the gateway has logged "engine ready" for every id (its stderr carries JSON log lines). */
function enginesReady(handle: GatewayHandle, ids: readonly string[], timeoutMs: number): Promise<void> {
  const ready = (): boolean => {
    const seen = new Set<string>();
    for (const line of handle.stderr().split('\n')) {
      try {
        const entry = JSON.parse(line) as { msg?: string; engine?: string };
        if (entry.msg === 'engine ready' && entry.engine) seen.add(entry.engine);
      } catch {
        /* not a log line */
      }
    }
    return ids.every((id) => seen.has(id));
  };
  if (ready()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`engines not ready after ${timeoutMs} ms:\n${handle.stderr()}`)), timeoutMs);
    const check = (): void => {
      if (!ready()) return;
      clearTimeout(timer);
      handle.proc.stderr.off('data', check);
      resolve();
    };
    handle.proc.stderr.on('data', check);
  });
}

beforeAll(async () => {
  gateway = await startGateway({ configFile: DEFAULT_CONFIG });
  // Under load the engines may still be building their indexes when the listener is up.
  await enginesReady(gateway, ['titles', 'abstracts'], 120_000);
  const { queries } = loadCranfieldEval();
  for (const [name, engines] of Object.entries(ARMS)) {
    const run = new Map<string, string[]>();
    for (let i = 0; i < queries.length; i += 8) {
      await Promise.all(
        queries.slice(i, i + 8).map(async (query) => {
          const params = { query: query.text, k: 100, ...(engines ? { _meta: { 'x-rcpgw': { engines } } } : {}) };
          const res = await rpc<{ hits: Hit[] }>(gateway.url, 'retrieve', params, { validate: false });
          if (!res.result) throw new Error(`retrieve failed for query ${query.id}: ${JSON.stringify(res.error)}`);
          run.set(
            query.id,
            res.result!.hits.map((h) => String(h.id)),
          );
        }),
      );
    }
    reference.set(name, run);
  }
}, 600_000);

afterAll(async () => {
  await gateway?.stop();
});

describe('rcp-gateway eval on Cranfield', () => {
  let inProcess: EvalJson;

  it('in process: the figures of the served gateway, arm by arm, and its exact rankings', async () => {
    const result = await cli(['--json', '--runs', dir, '--trials', '2000']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    inProcess = JSON.parse(result.stdout) as EvalJson;
    expect(inProcess.evaluated).toBe(225);
    for (const [arm, run] of reference) {
      const expected = evaluateRun(run);
      const got = means(inProcess, arm);
      expect(got['nDCG@10']).toBeCloseTo(expected.ndcg10, 12);
      expect(got['Recall@100']).toBeCloseTo(expected.recall100, 12);
      expect(got.MRR).toBeCloseTo(expected.mrr, 12);
      // The run file, read back in trec_eval order, holds the gateway's own rankings.
      const file = parseRun(readFileSync(path.join(dir, `${arm}.run`), 'utf8'), `${arm}.run`);
      for (const [qid, ids] of run) expect(file.run.get(qid)?.map((d) => d.id) ?? []).toEqual(ids);
    }
    const line = (arm: string): string =>
      `${arm.padEnd(10)} ${Object.entries(means(inProcess, arm))
        .map(([k, v]) => `${k} ${v.toFixed(4)}`)
        .join('  ')}`;
    console.log(['rcp-gateway eval, Cranfield:', ...[...reference.keys()].map(line)].join('\n  '));
    const fusedVsTitles = inProcess.comparisons.find((c) => c.arm === 'fused' && c.label === 'nDCG@10')!;
    expect(fusedVsTitles.pRandomisation).toBeLessThan(0.05);
    expect(fusedVsTitles.pTTest).toBeLessThan(0.05);
  }, 600_000);

  it('over HTTP (--url) against the served gateway: the fused figures', async () => {
    const result = await cli(['--json', '--url', `fused=${gateway.url}`, '--trials', '100']);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout) as EvalJson;
    const expected = evaluateRun(reference.get('fused')!);
    expect(means(json, 'fused')['nDCG@10']).toBeCloseTo(expected.ndcg10, 12);
    expect(means(json, 'fused').MRR).toBeCloseTo(expected.mrr, 12);
  }, 120_000);

  it('from TREC files: queries, qrels and run files give the same figures', async () => {
    const { queries, judgements } = loadCranfieldEval();
    const queriesFile = path.join(dir, 'queries.tsv');
    const qrelsFile = path.join(dir, 'qrels.txt');
    writeFileSync(queriesFile, queries.map((q) => `${q.id}\t${q.text}\n`).join(''));
    writeFileSync(qrelsFile, formatQrels(judgements));
    const result = await cli([
      '--json',
      '--queries',
      queriesFile,
      '--qrels',
      qrelsFile,
      '--run',
      path.join(dir, 'fused.run'),
      '--run',
      `t=${path.join(dir, 'titles.run')}`,
      '--trials',
      '100',
    ]);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout) as EvalJson;
    expect(json.arms.map((a) => a.arm)).toEqual(['fused', 't']);
    for (const [arm, from] of [
      ['fused', 'fused'],
      ['t', 'titles'],
    ] as const) {
      for (const [metric, value] of Object.entries(means(inProcess, from))) expect(means(json, arm)[metric]).toBeCloseTo(value, 12);
    }
  });

  it('--tune: tuned cross-validated nDCG@10 next to the configured RRF figure, and a valid arm', async () => {
    const result = await cli(['--tune', '--json']);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout) as {
      configured: { score: number };
      tuned: { arm: unknown; inSample: number; crossValidated: number };
      perFold: unknown[];
    };
    console.log(
      `Tuning on Cranfield: configured RRF nDCG@10 ${json.configured.score.toFixed(4)}; tuned in-sample ${json.tuned.inSample.toFixed(4)}, cross-validated ${json.tuned.crossValidated.toFixed(4)}; tuned arm ${JSON.stringify(json.tuned.arm)}`,
    );
    expect(json.configured.score).toBeCloseTo(means(inProcess, 'fused')['nDCG@10']!, 12);
    expect(json.tuned.inSample).toBeGreaterThanOrEqual(json.configured.score);
    expect(Number.isFinite(json.tuned.crossValidated)).toBe(true);
    expect(json.perFold).toHaveLength(5);
    expect(ArmSchema.safeParse(json.tuned.arm).success).toBe(true);
  }, 600_000);
});

describe('rcp-gateway eval errors', () => {
  it('names the file and line of a malformed qrels entry (exit 2)', async () => {
    const queriesFile = path.join(dir, 'q2.tsv');
    const qrelsFile = path.join(dir, 'bad-qrels.txt');
    writeFileSync(queriesFile, '1\tboundary layer\n');
    writeFileSync(qrelsFile, '1 0 184 2\n1 0 29\n');
    const result = await cli(['--queries', queriesFile, '--qrels', qrelsFile, '--run', path.join(dir, 'nothing.run')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`rcp-gateway eval: ${qrelsFile}:2: expected 4 columns "qid iter docid rel", got 3\n`);
  });

  it('names the line of a judgement for an unknown query (exit 2)', async () => {
    const queriesFile = path.join(dir, 'q3.tsv');
    const qrelsFile = path.join(dir, 'unknown-qrels.txt');
    writeFileSync(queriesFile, '1\tboundary layer\n');
    writeFileSync(qrelsFile, '1 0 184 2\n# comment\n99 0 29 1\n');
    const result = await cli(['--queries', queriesFile, '--qrels', qrelsFile, '--url', 'http://127.0.0.1:9/rcp']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`rcp-gateway eval: ${qrelsFile}:3: unknown query id "99" (not in ${queriesFile})\n`);
  });

  it('says which URL it cannot reach (exit 1)', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = server.address() as { port: number };
        server.close(() => resolve(free));
      });
    });
    const result = await cli(['--url', `http://127.0.0.1:${port}/rcp`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^rcp-gateway eval: cannot reach http://127\\.0\\.0\\.1:${port}/rcp: .*ECONNREFUSED`));
  });

  it('rejects an unknown arm and a bad option (exit 2)', async () => {
    const unknownArm = await cli(['--arm', 'nope']);
    expect(unknownArm.code).toBe(2);
    expect(unknownArm.stderr).toMatch(/unknown arm "nope" \(this config has: titles, abstracts, fts5, fused\)/);
    const badK = await cli(['--k', 'many', '--url', 'http://127.0.0.1:9/rcp']);
    expect(badK.code).toBe(2);
    expect(badK.stderr).toMatch(/--k expects an integer ≥ 1, got "many"/);
  });
});
