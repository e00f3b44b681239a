/**
 * `rcp-gateway check-config`: validate a config file, then start and initialize every engine
 * with a short timeout (the same Engine code the gateway runs) and report what each advertises.
 * Exit codes: 0 all good, 1 an engine is unreachable, 2 the config is invalid or usage is wrong.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfigFile } from '../node/config/load.js';
import { BreakerSettingsSchema, type BreakerSettings, type EngineConfig, type GatewayConfig } from '../core/config/schema.js';
import { silentLogger } from '../node/observability/log.js';
import { Engine } from '../core/upstream/engine.js';
import { nodeTransports } from '../node/upstream/factory.js';
import { renderTable } from './table.js';
import { adapterNotes, adapterTarget } from '../adapters/inspect.js';

const CHECK_CONFIG_HELP = `rcp-gateway check-config [--config FILE] [--timeout MS] [--no-probe] [--json]

Validates a gateway config, then starts each engine and sends it initialize (stdio engines are
spawned and stopped again), and prints one row per engine: id, transport, target, reachable,
server, advertised capabilities, breaker settings.
  --config FILE   config to check (default: the bundled config/default.json)
  --timeout MS    initialize timeout per engine (default 3000; never above the engine's timeoutMs)
  --no-probe      validate only; do not contact engines
  --json          print a JSON report instead of the table

Exit status: 0 valid and every engine reachable, 1 an engine is unreachable, 2 invalid config.
`;

export interface EngineReport {
  id: string;
  transport: string;
  target: string;
  required: boolean;
  reachable: boolean | null;
  error?: string;
  server?: string;
  capabilities: string[];
  breaker: BreakerSettings;
  /** Adapter engines: the database's findings (index use). */
  notes?: string[];
}

export async function checkConfig(argv: string[], defaultConfig: string): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        timeout: { type: 'string' },
        'no-probe': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    process.stderr.write(`rcp-gateway check-config: ${(err as Error).message}\n\n${CHECK_CONFIG_HELP}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(CHECK_CONFIG_HELP);
    return 0;
  }
  const timeoutMs = values.timeout === undefined ? 3_000 : Number(values.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
    process.stderr.write(`rcp-gateway check-config: invalid --timeout "${values.timeout}"\n`);
    return 2;
  }
  const file = values.config ?? defaultConfig;
  let config: GatewayConfig;
  try {
    config = loadConfigFile(file).config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    if (values.json) process.stdout.write(`${JSON.stringify({ file, valid: false, problems: err.problems }, null, 2)}\n`);
    else process.stderr.write(`${err.message}\n`);
    return 2;
  }

  const reports = await Promise.all(config.engines.map((engine) => probe(engine, config, values['no-probe'] ? undefined : timeoutMs)));
  const unreachable = reports.filter((r) => r.reachable === false);
  const warnings = idSpaceWarnings(config.engines);
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ file, valid: true, engines: reports, ...(warnings.length > 0 ? { warnings } : {}) }, null, 2)}\n`,
    );
  } else {
    for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
    process.stdout.write(`${file}: valid config, ${reports.length} engine(s)\n\n`);
    process.stdout.write(
      renderTable(
        ['ENGINE', 'TRANSPORT', 'TARGET', 'REACHABLE', 'SERVER', 'CAPABILITIES', 'BREAKER'],
        reports.map((r) => [
          `${r.id}${r.required ? ' (required)' : ''}`,
          r.transport,
          r.target,
          r.reachable === null ? 'not probed' : r.reachable ? 'yes' : `NO: ${r.error ?? 'unknown error'}`,
          r.server ?? '-',
          r.capabilities.length > 0 ? r.capabilities.join(',') : '-',
          breakerText(r.breaker),
        ]),
      ),
    );
    for (const r of reports) for (const note of r.notes ?? []) process.stdout.write(`\n${r.id}: ${note}`);
    if (reports.some((r) => (r.notes ?? []).length > 0)) process.stdout.write('\n');
    if (unreachable.length > 0) {
      process.stdout.write(`\n${unreachable.length} engine(s) unreachable: ${unreachable.map((r) => r.id).join(', ')}\n`);
    }
  }
  return unreachable.length > 0 ? 1 : 0;
}

async function probe(engineConfig: EngineConfig, config: GatewayConfig, timeoutMs: number | undefined): Promise<EngineReport> {
  const settings = config.gateway;
  const breaker: BreakerSettings = {
    ...BreakerSettingsSchema.parse({}),
    ...stripUndefined(settings.breaker),
    ...stripUndefined(engineConfig.breaker ?? {}),
  };
  const report: EngineReport = {
    id: engineConfig.id,
    transport: engineConfig.transport,
    target:
      engineConfig.transport === 'http'
        ? (engineConfig.url ?? (engineConfig.urls ?? []).join(' '))
        : engineConfig.transport === 'adapter'
          ? adapterTarget(engineConfig)
          : (engineConfig.command ?? []).join(' '),
    required: engineConfig.required,
    reachable: null,
    capabilities: [],
    breaker,
  };
  if (timeoutMs === undefined) return report;
  const probeTimeout = Math.min(timeoutMs, engineConfig.timeoutMs ?? settings.engineTimeoutMs);
  const engine = new Engine({ ...engineConfig, timeoutMs: probeTimeout }, settings, { logger: silentLogger(), transports: nodeTransports });
  try {
    report.reachable = await engine.start();
    if (!report.reachable) report.error = engine.lastError ?? 'initialize failed';
    if (engine.server) report.server = `${engine.server.name}${engine.server.version ? ` ${engine.server.version}` : ''}`;
    report.capabilities = Object.keys(engine.capabilities ?? {});
    if (report.reachable && engineConfig.transport === 'adapter') report.notes = await adapterNotes(engineConfig);
  } finally {
    await engine.stop();
  }
  return report;
}

/**
 * Engines whose declared `corpus` differs but that share an id space (§16.3: hits merge by id
 * within a space, so coinciding ids of unrelated documents would be fused into one hit).
 */
export function idSpaceWarnings(engines: readonly Pick<EngineConfig, 'id' | 'idSpace' | 'corpus'>[]): string[] {
  const bySpace = new Map<string, Array<{ id: string; corpus: string }>>();
  for (const engine of engines) {
    if (engine.corpus === undefined) continue;
    const space = engine.idSpace ?? '(default)';
    bySpace.set(space, [...(bySpace.get(space) ?? []), { id: engine.id, corpus: engine.corpus }]);
  }
  const warnings: string[] = [];
  for (const [space, members] of bySpace) {
    const corpora = new Set(members.map((m) => m.corpus));
    if (corpora.size < 2) continue;
    const listed = members.map((m) => `${m.id} (${m.corpus})`).join(', ');
    warnings.push(
      `engines ${listed} search different corpora but share the id space ${space}: their hits merge when ids coincide; give each corpus its own idSpace`,
    );
  }
  return warnings;
}

function breakerText(b: BreakerSettings): string {
  return `open at ${b.errorThresholdPercentage}% of >=${b.volumeThreshold} calls/${b.rollingWindowMs / 1000}s, reset ${b.resetTimeoutMs / 1000}s..${b.maxResetTimeoutMs / 1000}s`;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
