/**
 * What the Deno and Bun entries share: the config from `--config FILE` or the `RCPGW_CONFIG`
 * environment variable (JSON text), `--host` / `--port` overriding the config's, and the
 * `listening on <url>` line the Node gateway prints too.
 */
import type { GatewayConfig } from '../core/config/schema.js';
import { ConfigError } from '../core/config/validate.js';
import { unsafeBindReason } from '../core/auth/bind-policy.js';
import { edgeConfig } from './config.js';

export interface ServerStart {
  config: GatewayConfig;
  host: string;
  port: number;
}

/** Parse the command line and environment; `readFile` is the runtime's own. */
export async function serverStart(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  readFile: (path: string) => Promise<string>,
): Promise<ServerStart> {
  const option = (name: string): string | undefined => {
    const at = args.indexOf(`--${name}`);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const file = option('config');
  let source: string | undefined;
  if (file !== undefined) {
    try {
      source = await readFile(file);
    } catch (err) {
      throw new ConfigError([`cannot read file: ${(err as Error).message}`], file);
    }
  } else source = env.RCPGW_CONFIG;
  if (source === undefined) throw new ConfigError(['no config: pass --config FILE or set RCPGW_CONFIG to the config JSON'], 'RCPGW_CONFIG');
  // One process serves every request: its random cursor key is as good as Node's (set one for replicas).
  const config = edgeConfig(source, env, { requireCursorSecret: false }, file ?? 'RCPGW_CONFIG');
  const port = option('port');
  const host = option('host') ?? config.gateway.host;
  // As `rcp-gateway serve` does: no unauthenticated gateway on a non-loopback address unless told it is fronted.
  if (args.includes('--allow-unauthenticated')) config.gateway.auth.allowUnauthenticated = true;
  const unsafe = unsafeBindReason(host, config.gateway.auth);
  if (unsafe !== undefined) throw new ConfigError([unsafe], file ?? 'RCPGW_CONFIG');
  return { config, host, port: port !== undefined ? Number(port) : config.gateway.port };
}

/** The endpoint's URL, logged and printed (`rcp-gateway listening on <url>`) once the socket is bound. */
export function announceListening(
  logger: { info(fields: Record<string, unknown>, message?: string): void },
  host: string,
  port: number,
  basePath: string,
): void {
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}${basePath}`;
  logger.info({ url }, 'listening');
  console.error(`rcp-gateway listening on ${url}`);
}
