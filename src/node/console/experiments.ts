/**
 * The experiments panel's data: the gateway's `x-rcpgw/experiments` read-out when the gateway
 * advertises it, `null` when it does not (the panel then says "no experiments"). Absence is
 * remembered for a while so a watched console does not ask every second.
 */
import { ErrorCode, RcpError } from '../../core/protocol/errors.js';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import type { RcpService } from '../../core/service/contract.js';
import { VENDOR_KEY } from '../../core/federation/vendor.js';
import { consoleCall } from './call-context.js';

export const EXPERIMENTS_METHOD = 'x-rcpgw/experiments';
const RECHECK_ABSENT_MS = 30_000;
const DEADLINE_MS = 2_000;
/** Method not found, unknown method, capability missing: this gateway has no experiments read-out. */
const ABSENT_CODES = new Set<number>([ErrorCode.MethodNotFound, ErrorCode.UnknownMethod, ErrorCode.CapabilityMissing]);

export type ExperimentsReadout = { experiments: JsonObject } | { error: string } | null;

export class ExperimentsProbe {
  private absentUntil = 0;

  constructor(private readonly service: () => RcpService) {}

  async read(now = Date.now()): Promise<ExperimentsReadout> {
    if (now < this.absentUntil) return null;
    // The gateway advertises the read-out as `capabilities["x-rcpgw"].experiments` (§6.2) when it
    // serves it; without that, the method would be routed to an engine, which is not what is meant.
    const vendor = this.service().describe().capabilities?.[VENDOR_KEY] as JsonObject | undefined;
    if (vendor?.experiments !== true) return null;
    const call = consoleCall(EXPERIMENTS_METHOD, DEADLINE_MS);
    try {
      return { experiments: await this.service().call(EXPERIMENTS_METHOD, {}, call.ctx) };
    } catch (err) {
      if (err instanceof RcpError && ABSENT_CODES.has(err.code)) {
        this.absentUntil = now + RECHECK_ABSENT_MS;
        return null;
      }
      return { error: err instanceof Error ? err.message : String(err) };
    } finally {
      call.done();
    }
  }
}
