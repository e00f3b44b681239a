/**
 * Config reload the Kubernetes way: a ConfigMap volume is never written in place — the kubelet
 * swaps the `..data` symlink to a new timestamped folder in one rename. With gateway.watchConfig
 * the gateway must notice that swap, apply a valid new config, and keep the running one when the
 * new one does not validate, saying why (log line + rcpgw_config_reloads_total{result="invalid"}).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { stdioEngineCommand, tmpDir } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { logLines, metricValue, origin, scrape, until } from '../observability/support.js';
import { createConfigMapVolume, updateConfigMapVolume } from './support/configmap-volume.js';

const procs = suiteProcesses();

const engine = (id: string): Record<string, unknown> => ({
  id,
  transport: 'stdio',
  command: stdioEngineCommand(['--id', id, '--id-prefix', `${id}:`]),
});
const config = (engines: Array<Record<string, unknown>>): string => JSON.stringify({ engines, gateway: { watchConfig: true } }, null, 2);

describe('a ConfigMap-mounted config', () => {
  it('is reloaded when the kubelet swaps ..data, and a bad one is refused while the old one runs', async () => {
    const volume = path.join(tmpDir('rcp-configmap-'), 'config');
    createConfigMapVolume(volume, { 'config.json': config([engine('a')]) });
    const gw = await procs.gateway(undefined, {
      configFile: path.join(volume, 'config.json'),
      env: { ...process.env, RCPGW_LOG_FORMAT: 'json' },
    });
    const reloads = async (result: string): Promise<number> =>
      metricValue(await scrape(origin(gw.url)), 'rcpgw_config_reloads_total', { result });
    const enginesAnswering = async (): Promise<string[]> => {
      const answer = await rpc<{ _meta: { engines: string[] } }>(gw.url, 'retrieve', { query: 'fusion ranking', k: 2 });
      expect(answer.error).toBeUndefined();
      return answer.result!._meta.engines;
    };
    expect(await enginesAnswering()).toEqual(['a']);

    // 1. A valid new config arrives by symlink swap: applied, the added engine answers.
    updateConfigMapVolume(volume, { 'config.json': config([engine('a'), engine('b')]) });
    await until('the swap to be applied', async () => ((await reloads('ok')) === 1 ? true : undefined));
    // The log line is written asynchronously to the metric: wait for it rather than read it once.
    const applied = await until('the reload log line', () => logLines(gw.stderr()).find((l) => l.msg === 'config reloaded'));
    expect(applied).toMatchObject({ trigger: 'watch', added: ['b'] });
    expect((await enginesAnswering()).sort()).toEqual(['a', 'b']);

    // 2. An invalid one: refused with the exact problem, the running config keeps answering.
    updateConfigMapVolume(volume, { 'config.json': config([engine('a'), { id: 'broken', transport: 'http', url: 'not a url' }]) });
    await until('the bad swap to be refused', async () => ((await reloads('invalid')) === 1 ? true : undefined));
    const refusal = await until('the refusal log line', () =>
      logLines(gw.stderr()).find((l) => String(l.msg).startsWith('config reload rejected')),
    );
    expect(refusal.problems).toEqual(['engines[1].url: expected an http(s) URL']);
    expect((await enginesAnswering()).sort()).toEqual(['a', 'b']);
    expect(await reloads('ok')).toBe(1);

    // 3. The next valid swap is applied again (the refusal did not stop the watch).
    updateConfigMapVolume(volume, { 'config.json': config([engine('b')]) });
    await until('the third swap to be applied', async () => ((await reloads('ok')) === 2 ? true : undefined));
    expect(await enginesAnswering()).toEqual(['b']);
  });
});
