/**
 * Load generation with autocannon: a saturating throughput run (closed loop, many connections)
 * and a latency run at a fixed offered rate (`overallRate`), so latency is not measured at
 * saturation. Latencies are taken from autocannon's per-response event (float milliseconds):
 * its own histogram rounds to whole milliseconds and back-fills coordinated-omission samples at
 * a 1 ms interval, which would blur sub-millisecond loopback figures.
 */
import autocannon from 'autocannon';

/**
 * @typedef {object} Target
 * @property {string} url            full URL (…/rcp/retrieve)
 * @property {string} body           request body
 * @property {Record<string,string>} [headers]
 * @property {(body: string) => boolean} verify  cheap check that an answer is the real thing
 */

function run(target, options, onResponse) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...target.headers },
        body: target.body,
        verifyBody: target.verify,
        timeout: 20,
        sampleInt: options.sampleInt ?? 250,
        ...options.autocannon,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    if (onResponse) instance.on('response', onResponse);
  });
}

function summarize(result) {
  const good = result['2xx'] - result.mismatches;
  return {
    rps: good / result.duration,
    requests: result.requests.total,
    bad: result.non2xx + result.errors + result.timeouts + result.mismatches,
    duration: result.duration,
  };
}

/** Saturating run: `connections` concurrent keep-alive connections, closed loop. */
export async function throughput(target, { connections, seconds, sampleInt }) {
  const result = await run(target, { sampleInt, autocannon: { connections, duration: seconds } });
  return summarize(result);
}

/**
 * Fixed offered rate: autocannon admits each connection's per-second share as fast as the
 * connection allows, then idles until the next second, so at most `connections` requests are
 * in flight and the overall rate is `rate`.
 */
export async function latency(target, { rate, connections, seconds, sampleInt }) {
  const samples = [];
  const result = await run(
    target,
    {
      sampleInt,
      autocannon: { connections: Math.max(1, Math.min(connections, rate)), overallRate: Math.max(1, Math.round(rate)), duration: seconds },
    },
    (_client, status, _bytes, ms) => {
      if (status === 200) samples.push(ms);
    },
  );
  samples.sort((a, b) => a - b);
  const at = (q) => (samples.length === 0 ? NaN : samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]);
  return { ...summarize(result), offered: rate, p50: at(0.5), p99: at(0.99), p999: at(0.999), samples: samples.length };
}
