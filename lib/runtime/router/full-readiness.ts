import { FULL_MAY_LEAVE_KEY, READINESS_MAP } from './haproxy-config';
import { RuntimeApi } from './runtime-api';

/** A target of the router group's target group, as the load balancer reports it (`DescribeTargetHealth`). */
export interface GroupTarget {
  /** The target's id: a task's private IPv4 address (an `ip` target group). */
  readonly id: string;
  /** `initial`, `healthy`, `unhealthy`, `unused`, `draining` or `unavailable`. */
  readonly state: string;
}

/**
 * Whether a full task may report itself unready, so that the load balancer sends its new flows to the
 * group's other tasks. A flood fills every task alike, and readiness failing on all of them together
 * would take the whole group out (ECS replaces tasks the load balancer finds unhealthy, and the NLB,
 * with every target unhealthy, fails open to all of them anyway), so at most half of the group may
 * be out, and which tasks may go is decided the same way by every task without talking to the
 * others: the healthy targets in order of their ids, the first `healthy - ceil(serving / 2)` of them.
 * Each task sees the group a little late (its own poll, and two failed checks before the NLB marks
 * a target), but every view gives the same tasks the places, so no two views add up to more than
 * half. A task already out keeps its place while at least half of the others stay healthy.
 * Draining and unused targets do not count; a task that does not find itself among the targets
 * (just registered, or the group unknown) stays in.
 */
export function mayLeaveWhenFull(targets: readonly GroupTarget[], self: string | undefined): { mayLeave: boolean; reason: string } {
  const serving = targets.filter((t) => t.state !== 'draining' && t.state !== 'unused');
  const me = serving.find((t) => t.id === self);
  if (self === undefined || !me)
    return { mayLeave: false, reason: `this task (${self ?? 'address unknown'}) is not among its target group's ${serving.length} targets` };
  const need = Math.ceil(serving.length / 2);
  const healthy = serving
    .filter((t) => t.state === 'healthy')
    .map((t) => t.id)
    .sort();
  if (me.state !== 'healthy') {
    const others = healthy.length;
    return others >= need
      ? { mayLeave: true, reason: `out already; ${others} of the other ${serving.length - 1} targets are healthy (${need} must stay)` }
      : { mayLeave: false, reason: `only ${others} of the other ${serving.length - 1} targets are healthy; ${need} must stay in` };
  }
  const places = healthy.length - need;
  const rank = healthy.indexOf(self);
  return rank < places
    ? { mayLeave: true, reason: `${rank + 1} of the ${places} that may leave (${healthy.length} of ${serving.length} healthy, ${need} must stay)` }
    : {
        mayLeave: false,
        reason:
          places > 0
            ? `the ${places} that may leave come first in address order (${healthy.length} of ${serving.length} healthy, ${need} must stay)`
            : `${healthy.length} of ${serving.length} targets healthy; ${need} must stay in`,
      };
}

/** Past this share of its connection limit a task asks its target group whether it may leave (below it, it is not full: no call). */
export const FULL_READINESS_ASK_PERCENT = 80;

export interface FullReadinessOptions {
  readonly api: RuntimeApi;
  /** HAProxy's state directory, where its readiness map is (`READINESS_MAP`). */
  readonly stateDir: string;
  /** The router frontend's serving limit (`maxConn`): fullness is measured against it. */
  readonly connectionLimit: number;
  /** The targets of this task's target group (ELBv2 `DescribeTargetHealth`). */
  readonly targets: () => Promise<readonly GroupTarget[]>;
  /** This task's target id (its private IPv4 address, from the ECS task metadata endpoint). */
  readonly self: () => Promise<string | undefined>;
  /** How long an answer holds: HAProxy ignores a permission past it (a stuck or dead agent's last answer expires). */
  readonly holdMs: number;
  readonly emit: (line: string) => void;
  readonly now?: () => number;
}

/**
 * Tells HAProxy until when this task may report itself full (`READINESS_MAP`: `full-may-leave` holds
 * a Unix time; the readiness rule compares it with the clock), once per `tick`. Below
 * `FULL_READINESS_ASK_PERCENT` of its limit a task is not full and asks nobody (the load balancer's
 * API is rate-limited per account and region); past it, it asks its target group's health and
 * `mayLeaveWhenFull`. Anything that fails (the load balancer's API, the metadata endpoint) writes 0:
 * a full task keeps serving at its limit, as it did before it could leave. Logged when the answer changes.
 */
export class FullReadinessGate {
  private last?: string;
  /** The last tick could not ask (an API error or throttling): the loop waits twice as long. */
  public failed = false;

  constructor(private readonly o: FullReadinessOptions) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  public async tick(): Promise<boolean> {
    let decision: { mayLeave: boolean; reason: string };
    try {
      const frontend = (await this.o.api.stats()).find((r) => r.pxname === 'router' && r.svname === 'FRONTEND');
      const connections = Number(frontend?.scur || 0);
      if (connections * 100 < this.o.connectionLimit * FULL_READINESS_ASK_PERCENT) {
        decision = { mayLeave: false, reason: `not full (${connections} of ${this.o.connectionLimit} connections)` };
      } else {
        const [targets, self] = await Promise.all([this.o.targets(), this.o.self()]);
        decision = mayLeaveWhenFull(targets, self);
      }
      this.failed = false;
    } catch (error) {
      this.failed = true;
      decision = { mayLeave: false, reason: `target health unknown: ${(error as Error).message}` };
    }
    const until = decision.mayLeave ? Math.ceil((this.now() + this.o.holdMs) / 1000) : 0;
    try {
      await this.o.api.expectOk(`set map ${this.o.stateDir}/${READINESS_MAP} ${FULL_MAY_LEAVE_KEY} ${until}`);
    } catch (error) {
      this.o.emit(JSON.stringify({ level: 'warn', event: 'full-readiness-error', error: (error as Error).message }));
      return false;
    }
    const summary = `${decision.mayLeave}:${decision.reason.replace(/\d+/g, '#')}`;
    if (summary !== this.last)
      this.o.emit(JSON.stringify({ level: 'info', event: 'full-readiness', mayLeave: decision.mayLeave, reason: decision.reason }));
    this.last = summary;
    return decision.mayLeave;
  }
}

/**
 * Runs the gate every `intervalMs`, each tick after the last one ended (a slow answer never lands
 * after a newer one), and twice as late after a tick whose call failed (a throttled API backs off).
 */
export function runFullReadiness(gate: FullReadinessGate, intervalMs: number): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const loop = async () => {
    const started = Date.now();
    await gate.tick().catch(() => false);
    // Jitter (±10%) so a group's tasks, started together, do not ask together.
    const next = (gate.failed ? 2 : 1) * intervalMs * (0.9 + Math.random() * 0.2) - (Date.now() - started);
    if (!stopped) timer = setTimeout(() => void loop(), Math.max(1000, next));
  };
  void loop();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
