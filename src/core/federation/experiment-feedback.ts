/**
 * §7.16 `feedback` that credits an interleaving impression. A client that was served an
 * interleaved answer echoes its token in `_meta["x-rcpgw"].attribution`; the gateway verifies it
 * (any replica with the secret can: experiments/attribution.ts), credits the signals to the arm
 * whose team contributed each hit (`used`, `cited`, `helpful: true` or a positive `reward`), and
 * counts the impression as a win for A, for B, or a tie. A forged, malformed or stale token, or
 * one for an experiment no longer configured, is -32602. Feedback without a token is routed as
 * always (routing.ts) and credits nobody.
 *
 * The signals are always forwarded, too: to each engine that returned a signalled hit (named in
 * the token) and advertises `feedback`, with only that engine's signals. Forwarding never fails
 * the call (§7.16: side-effect only); the answer says where it went. Feedback never alters any
 * retrieve: it only counts.
 */
import { verifyAttribution, creditFeedback, type AttributionClaims, type FeedbackSignal } from '../experiments/attribution.js';
import { RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { legScope, runLeg, stripGatewayMeta } from './leg.js';
import { routeToOne } from './routing.js';
import { VENDOR_KEY } from './vendor.js';

/** The token a feedback call carries, if any. */
export function attributionOf(params: JsonObject): unknown {
  const meta = isJsonObject(params._meta) ? params._meta : undefined;
  const vendor = meta?.[VENDOR_KEY];
  return isJsonObject(vendor) ? vendor.attribution : undefined;
}

export async function experimentFeedback(
  method: string,
  params: JsonObject,
  ctx: CallContext,
  fed: FederationContext,
): Promise<JsonObject> {
  const token = attributionOf(params);
  const section = fed.settings.experiments;
  if (token === undefined || token === null || fed.experiments === undefined) return routeToOne(method, params, ctx, fed);
  if (section?.secret === undefined)
    throw RcpError.invalidParams(`_meta.${VENDOR_KEY}.attribution`, 'no interleave experiment is configured');
  const claims = verifyAttribution(token, { secret: section.secret, ttlMs: section.tokenTtlMs });
  const experiment = section.list.find((e) => e.id === claims.experiment);
  if (experiment?.kind !== 'interleave' || experiment.arms[0] !== claims.arms[0] || experiment.arms[1] !== claims.arms[1]) {
    throw RcpError.invalidParams(`_meta.${VENDOR_KEY}.attribution`, `experiment "${claims.experiment}" is not configured (stale token)`);
  }
  const signals = signalsOf(params);
  const credit = creditFeedback(claims, signals);
  const credited = fed.experiments.firstCredit(token as string);
  if (credited) fed.experiments.hooks.onInterleaveOutcome(experiment.id, experiment.arms, credit.outcome);
  const forwarded = await forward(params, signals, claims, ctx, fed);
  const winner = credit.outcome === 'tie' ? 'tie' : credit.outcome === 'A' ? claims.arms[0] : claims.arms[1];
  return {
    accepted: signals.length,
    _meta: { [VENDOR_KEY]: { experiment: experiment.id, outcome: winner, credited, ...forwarded } },
  };
}

function signalsOf(params: JsonObject): FeedbackSignal[] {
  if (!Array.isArray(params.signals)) throw RcpError.invalidParams('signals', 'expected an array of signals (§7.16)');
  return params.signals.map((signal, i) => {
    if (!isJsonObject(signal) || typeof signal.hitId !== 'string') throw RcpError.invalidParams(`signals[${i}].hitId`, 'expected a string');
    return {
      hitId: signal.hitId,
      ...(typeof signal.used === 'boolean' ? { used: signal.used } : {}),
      ...(typeof signal.cited === 'boolean' ? { cited: signal.cited } : {}),
      ...(typeof signal.helpful === 'boolean' ? { helpful: signal.helpful } : {}),
      ...(typeof signal.reward === 'number' ? { reward: signal.reward } : {}),
    };
  });
}

/** Each engine that returned a signalled hit and advertises `feedback` gets that hit's signals. */
async function forward(
  params: JsonObject,
  signals: readonly FeedbackSignal[],
  claims: AttributionClaims,
  ctx: CallContext,
  fed: FederationContext,
): Promise<{ forwarded: string[]; failed?: string[] }> {
  const raw = params.signals as unknown[];
  const perEngine = new Map<Engine, unknown[]>();
  signals.forEach((signal, i) => {
    for (const id of claims.sources?.get(signal.hitId) ?? []) {
      const engine = fed.engines.find((e) => e.id === id);
      if (engine === undefined || !engine.has('feedback')) continue;
      let list = perEngine.get(engine);
      if (!list) perEngine.set(engine, (list = []));
      list.push(raw[i]);
    }
  });
  if (perEngine.size === 0) return { forwarded: [] };
  const outbound = stripGatewayMeta(params);
  const scope = legScope(ctx, fed);
  const outcomes = await Promise.all(
    [...perEngine].map(async ([engine, own]) => ({
      engine: engine.id,
      leg: await runLeg(scope, engine, 'feedback', { ...outbound, signals: own }),
    })),
  );
  const failed = outcomes.filter((o) => !o.leg.ok).map((o) => o.engine);
  return { forwarded: outcomes.filter((o) => o.leg.ok).map((o) => o.engine), ...(failed.length > 0 ? { failed } : {}) };
}
