/**
 * Fusion weights are bounded (config/primitives.ts `fusionWeight`): weighted fusion sums
 * weight × score over the engines, and weights near the number range overflowed that sum to
 * Infinity, answered as a null score (not a number, §7.7). A request's weights past the bound are
 * -32602 on `_meta.x-rcpgw` (§12); an engine's configured weight past it is a config error.
 */
import { describe, expect, it } from 'vitest';
import { MAX_FUSION_WEIGHT } from '../../src/core/config/primitives.js';
import { validateConfig } from '../../src/core/config/validate.js';
import { gatewayOptions } from '../../src/core/federation/vendor.js';
import { RcpError } from '../../src/core/protocol/errors.js';

const engines = [
  { id: 'a', transport: 'http', url: 'http://127.0.0.1:9/rcp' },
  { id: 'b', transport: 'http', url: 'http://127.0.0.1:10/rcp' },
];
const settings = validateConfig({ engines }, {}).gateway;

function optionsWith(weights: Record<string, number>): unknown {
  return gatewayOptions({ query: 'q', _meta: { 'x-rcpgw': { fusion: 'weighted', weights } } }, settings);
}

describe('fusion weight bounds', () => {
  it('takes request weights up to the bound and refuses larger ones with -32602', () => {
    expect(() => optionsWith({ a: MAX_FUSION_WEIGHT, b: 0 })).not.toThrow();
    for (const weight of [1e308, MAX_FUSION_WEIGHT * 2]) {
      let caught: unknown;
      try {
        optionsWith({ a: weight, b: weight });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(RcpError);
      expect((caught as RcpError).code).toBe(-32602);
    }
  });

  it('refuses an engine weight past the bound in the config', () => {
    expect(() => validateConfig({ engines: [{ ...engines[0], weight: MAX_FUSION_WEIGHT }] }, {})).not.toThrow();
    expect(() => validateConfig({ engines: [{ ...engines[0], weight: 1e308 }] }, {})).toThrow(/weight ≤ 1000000/);
  });
});
