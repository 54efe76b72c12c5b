/**
 * How a client of a sharded router retries (docs/lanes.md): a request goes to one lane of the
 * tenant's shard; on a connection failure, or an error the router itself produced, it goes once to
 * the shard's next lane. A cell's own answer (any status without this header) is final: another
 * lane reaches the same cell.
 */

/** Set on the responses the router makes itself when the fault may be its own (no mapping, cell unreachable from it). */
export const ROUTER_ERROR_HEADER = 'x-router-error';

/** What came back from one lane. */
export type LaneOutcome =
  | { readonly kind: 'response'; readonly status: number; readonly routerError?: string }
  /** No HTTP response: refused, reset, timed out, closed before the status line. */
  | { readonly kind: 'connection-failed' };

/** Whether the client should try the next lane of the shard (once per lane). */
export function tryNextLane(outcome: LaneOutcome): boolean {
  return outcome.kind === 'connection-failed' || (outcome.status >= 500 && outcome.routerError !== undefined);
}

/**
 * The order a tenant's client tries its shard's lanes in: starting at a lane picked by the tenant's
 * hash, so the tenants of a shard spread over its lanes, then the others in turn.
 */
export function laneOrder(lanes: readonly number[], tenantHash: number): number[] {
  const start = tenantHash % lanes.length;
  return [...lanes.slice(start), ...lanes.slice(0, start)];
}
