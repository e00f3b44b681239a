/**
 * `rcp-gateway eval`: offline evaluation of retrieval arms on a judged query set (default: the
 * bundled Cranfield collection), and `--tune` to search fusion parameters with cross-validation.
 * Exit codes: 0 done, 1 a source failed (an engine or URL), 2 bad usage or input (the message
 * names the file and line).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../node/config/load.js';
import { GATEWAY_ARM, listDepth } from '../evaluation/arm-fusion.js';
import { UsageError, type Backend } from '../evaluation/backend.js';
import { HttpArm } from '../evaluation/http-backend.js';
import { InProcessGateway } from '../evaluation/in-process.js';
import { loadInputs, loadRunFile, type EvalInputs } from '../evaluation/inputs.js';
import { evalHtml } from '../evaluation/html-report.js';
import { evalJson, evalText, tuneJson, tuneText } from '../evaluation/report.js';
import { collectRuns, forEachQuery, type Failure, type RunOptions } from '../evaluation/runner.js';
import { compareArms, evaluatedQueries, metricsFor, scoreRun, type MetricKey } from '../evaluation/scoring.js';
import { EvalInputError, formatRun, type RankedDocs } from '../evaluation/trec.js';
import { DEFAULT_SPACE, tune } from '../evaluation/tune.js';

export const EVAL_HELP = `rcp-gateway eval [sources] [--queries FILE --qrels FILE] [options]

Runs a judged query set through retrieval arms and reports nDCG@k, P@k, Recall@k, MRR and MAP
(trec_eval definitions), each arm paired against a baseline arm. Without --queries/--qrels the
bundled Cranfield collection is used.

Sources (without --url or --run: the arms of the bundled config/default.json, in process):
  --config FILE        build a gateway from FILE in this process; its arms are each engine alone,
                       "fused" (the gateway as configured) and every gateway.experiments.arms entry
  --arm NAME           evaluate only this arm of --config (repeatable)
  --url [NAME=]URL     one arm served by a running RCP server at URL (repeatable; default name: url)
  --run [NAME=]FILE    one arm read from a TREC run file (repeatable; default name: its run tag)

Input and output:
  --queries FILE       queries: "qid<TAB>text" lines or JSON lines {"qid": …, "text": …}
  --qrels FILE         judgements: "qid 0 docid rel" lines (rel > 0 is relevant, graded by value)
  --runs DIR           write each arm's run as DIR/<arm>.run ("qid Q0 docid rank score tag")
  --json               one JSON document on stdout instead of tables
  --html FILE          also write a self-contained HTML report to FILE (tables, per-query plots)

Options:
  --k N                hits asked of each arm per query (default 100)
  --at N               cutoff of nDCG and P (default 10)
  --recall-at N        cutoff of Recall (default 100)
  --baseline ARM       arm the others are compared with (default: the first)
  --concurrency N      queries in flight (default 4)
  --deadline-ms N      deadline per query (default 10000)
  --trials N           randomisation-test trials (default 10000)
  --seed N             seed for the randomisation test and the folds (default 1)

Tuning (in process, --config arms only):
  --tune               search fusion strategy, rrfK, per-engine weights and depth for the
                       "fused" arm with k-fold cross-validation; prints a config fragment
  --folds N            folds (default 5)
  --metric M           ndcg | p | recall | mrr | map (default ndcg)
`;

const OPTIONS = {
  config: { type: 'string' },
  arm: { type: 'string', multiple: true },
  url: { type: 'string', multiple: true },
  run: { type: 'string', multiple: true },
  queries: { type: 'string' },
  qrels: { type: 'string' },
  runs: { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
  k: { type: 'string' },
  at: { type: 'string' },
  'recall-at': { type: 'string' },
  baseline: { type: 'string' },
  concurrency: { type: 'string' },
  'deadline-ms': { type: 'string' },
  trials: { type: 'string' },
  seed: { type: 'string' },
  tune: { type: 'boolean' },
  folds: { type: 'string' },
  metric: { type: 'string' },
  help: { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS }>>['values'];

function intOption(values: Values, name: keyof Values, fallback: number, min = 1): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== 'string' || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`--${name} expects an integer ≥ ${min}, got "${String(text)}"`);
  return n;
}

/** `NAME=VALUE` or plain `VALUE` (then `fallback` names it). */
function named(spec: string, fallback: string): [string, string] {
  const eq = spec.indexOf('=');
  const scheme = spec.indexOf('://');
  return eq > 0 && (scheme < 0 || eq < scheme) ? [spec.slice(0, eq), spec.slice(eq + 1)] : [fallback, spec];
}

export async function evalCommand(argv: string[], defaultConfig: string): Promise<number> {
  let values: Values;
  try {
    values = parseArgs({ args: argv, options: OPTIONS, strict: true }).values;
  } catch (err) {
    process.stderr.write(`rcp-gateway eval: ${(err as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(EVAL_HELP);
    return 0;
  }
  const backends: Backend[] = [];
  try {
    const inputs = loadInputs(values.queries, values.qrels);
    return values.tune ? await runTune(values, inputs, defaultConfig) : await runEval(values, inputs, defaultConfig, backends);
  } catch (err) {
    const usage = err instanceof UsageError || err instanceof EvalInputError || err instanceof ConfigError;
    process.stderr.write(`rcp-gateway eval: ${(err as Error).message}\n`);
    return usage ? 2 : 1;
  } finally {
    await Promise.all(backends.map((backend) => backend.close()));
  }
}

function runOptions(values: Values, label: string): RunOptions {
  const tty = process.stderr.isTTY === true;
  return {
    concurrency: intOption(values, 'concurrency', 4),
    deadlineMs: intOption(values, 'deadline-ms', 10_000),
    ...(tty
      ? {
          onProgress: (done: number, total: number) =>
            process.stderr.write(`\r${label} ${done}/${total} queries${done === total ? '\n' : ''}`),
        }
      : {}),
  };
}

async function openBackends(values: Values, k: number, defaultConfig: string, backends: Backend[]): Promise<void> {
  const deadlineMs = intOption(values, 'deadline-ms', 10_000);
  const urls = values.url ?? [];
  if (values.config !== undefined || (urls.length === 0 && (values.run ?? []).length === 0)) {
    backends.push(await startInProcess(values, k, defaultConfig));
  } else if (values.arm !== undefined) {
    throw new UsageError('--arm selects arms of --config');
  }
  for (const [i, spec] of urls.entries()) {
    const [name, url] = named(spec, urls.length === 1 ? 'url' : `url${i + 1}`);
    backends.push(await HttpArm.connect(name, url, deadlineMs));
  }
}

async function startInProcess(values: Values, k: number, defaultConfig: string): Promise<InProcessGateway> {
  // maxK high enough for two windows at the deepest an arm may ask (the schema's fusionHeadroom 10, fusionDepth 1000).
  return InProcessGateway.start(values.config ?? defaultConfig, {
    ...(values.arm ? { only: values.arm } : {}),
    maxDepth: listDepth([{ fusionHeadroom: 10, fusionDepth: 1000 }], [{ engine: '' }], k),
  });
}

async function runEval(values: Values, inputs: EvalInputs, defaultConfig: string, backends: Backend[]): Promise<number> {
  const k = intOption(values, 'k', 100);
  const metrics = metricsFor({ at: intOption(values, 'at', 10), recallAt: intOption(values, 'recall-at', 100) });
  // Run files first: a malformed one is reported before any engine is started.
  const fromFiles = (values.run ?? []).map((spec) => {
    const [givenName, file] = named(spec, '');
    const runFile = loadRunFile(file, inputs.queries);
    return [givenName || runFile.tag, runFile.run] as const;
  });
  await openBackends(values, k, defaultConfig, backends);
  const { runs, failures } = await collectRuns(inputs.queries, backends, k, runOptions(values, 'eval'));
  for (const [name, run] of fromFiles) {
    if (runs.has(name)) throw new UsageError(`two arms are named "${name}"`);
    runs.set(name, run);
    failures.set(name, []);
  }
  const arms = [...runs.keys()];
  const baseline = values.baseline ?? arms[0]!;
  if (!runs.has(baseline)) throw new UsageError(`--baseline "${baseline}" is not one of the arms: ${arms.join(', ')}`);
  if (values.runs !== undefined) writeRuns(values.runs, runs);
  const queryIds = evaluatedQueries(inputs.queries, inputs.judgements);
  const ids = (run: Map<string, RankedDocs>): Map<string, string[]> => new Map([...run].map(([qid, docs]) => [qid, docs.map((d) => d.id)]));
  const scores = arms.map((arm) => scoreRun(arm, ids(runs.get(arm)!), inputs.judgements, queryIds, metrics));
  const base = scores.find((s) => s.arm === baseline)!;
  const trials = intOption(values, 'trials', 10_000);
  const seed = intOption(values, 'seed', 1, 0);
  const comparisons = scores.filter((s) => s !== base).flatMap((s) => compareArms(s, base, metrics, { trials, seed }));
  const summary = {
    collection: inputs.collection,
    queries: inputs.queries.length,
    evaluated: queryIds.length,
    k,
    baseline,
    metrics,
    scores,
    failures,
    comparisons,
    trials,
    seed,
  };
  process.stdout.write(values.json ? evalJson(summary) : evalText(summary));
  if (values.html !== undefined) writeFileSync(values.html, evalHtml(summary, queryIds));
  reportFailures(failures);
  return 0;
}

function writeRuns(dir: string, runs: ReadonlyMap<string, ReadonlyMap<string, RankedDocs>>): void {
  mkdirSync(dir, { recursive: true });
  for (const [arm, run] of runs) {
    const tag = arm.replace(/[^A-Za-z0-9._:-]+/g, '_');
    writeFileSync(path.join(dir, `${tag}.run`), formatRun(tag, run));
  }
}

function reportFailures(failures: ReadonlyMap<string, readonly Failure[]>): void {
  for (const [arm, list] of failures) {
    if (list.length === 0) continue;
    const shown = list
      .slice(0, 3)
      .map((f) => `query ${f.qid}: ${f.message}`)
      .join('; ');
    process.stderr.write(
      `rcp-gateway eval: arm "${arm}" failed ${list.length} queries (scored 0): ${shown}${list.length > 3 ? '; …' : ''}\n`,
    );
  }
}

async function runTune(values: Values, inputs: EvalInputs, defaultConfig: string): Promise<number> {
  if (values.url !== undefined || values.run !== undefined) throw new UsageError('--tune works on the arms of --config, in process');
  if (values.html !== undefined) throw new UsageError('--html reports an evaluation, not --tune');
  const k = intOption(values, 'k', 100);
  const metricKey = (values.metric ?? 'ndcg') as MetricKey;
  const metric = metricsFor({ at: intOption(values, 'at', 10), recallAt: intOption(values, 'recall-at', 100) }).find(
    (m) => m.key === metricKey,
  );
  if (metric === undefined) throw new UsageError(`--metric expects ndcg, p, recall, mrr or map, got "${metricKey}"`);
  const gateway = await startInProcess({ ...values, arm: [GATEWAY_ARM] }, k, defaultConfig);
  try {
    const depth = listDepth(
      DEFAULT_SPACE.headrooms.map((fusionHeadroom) => ({ fusionHeadroom, fusionDepth: gateway.resolvedArms[0]!.fusionDepth })),
      gateway.engineLimits,
      k,
    );
    const fetched = await forEachQuery(
      inputs.queries,
      async (query, budget) => {
        const { lists, errors } = await gateway.engineLists(query, depth, budget);
        if (lists.size === 0) throw new Error([...errors.values()].map((e) => e.message).join('; '));
        return lists;
      },
      runOptions(values, 'tune: fetching'),
    );
    const lists = new Map(
      [...fetched].filter((entry): entry is [string, Exclude<(typeof entry)[1], Error>] => !(entry[1] instanceof Error)),
    );
    const queryIds = evaluatedQueries(inputs.queries, inputs.judgements);
    const folds = intOption(values, 'folds', 5, 2);
    const seed = intOption(values, 'seed', 1, 0);
    const report = await tune({ base: gateway.resolvedArms[0]!, lists, judgements: inputs.judgements, queryIds, metric, k, folds, seed });
    const summary = { report, queries: queryIds.length, folds, seed };
    process.stdout.write(values.json ? tuneJson(summary) : tuneText(summary));
    const failed = inputs.queries.length - lists.size;
    if (failed > 0) process.stderr.write(`rcp-gateway eval: ${failed} queries failed to fetch (scored 0 for every candidate)\n`);
    return 0;
  } finally {
    await gateway.close();
  }
}
