import { App } from 'aws-cdk-lib';
import { NagPack } from 'cdk-nag';
import { IConstruct } from 'constructs';

/** Findings of one pack in one synth: open ones fail it, acknowledged ones are counted here. */
export interface PackSummary {
  readonly pack: string;
  readonly open: number;
  readonly acknowledged: number;
}

const GATES = new WeakMap<App, { pack: NagPack; acknowledged: Set<string> }[]>();

/**
 * Counts what `pack` acknowledges while the app synthesizes. cdk-nag 3 reports only open findings;
 * it calls its acknowledgment check only for non-compliant resources, so observing that check
 * counts the acknowledged findings (the same technique as `npm run audit`, lib/app/audit).
 */
export function countAcknowledged(app: App, pack: NagPack): NagPack {
  // A finding is a rule on a resource; counted once however often the check runs for it.
  const entry = { pack, acknowledged: new Set<string>() };
  const hooked = pack as unknown as { isAcknowledged?: (node: unknown, ruleId: string) => boolean };
  const check = hooked.isAcknowledged?.bind(pack);
  if (check) {
    hooked.isAcknowledged = (node, ruleId) => {
      const hit = check(node, ruleId);
      if (hit) entry.acknowledged.add(`${ruleId} ${(node as IConstruct).node?.path ?? String(node)}`);
      return hit;
    };
  }
  GATES.set(app, [...(GATES.get(app) ?? []), entry]);
  return pack;
}

/**
 * After a successful `app.synth()`: per gating pack, open (0: an open finding fails synth) and
 * acknowledged findings. Empty when the app has no audit gate.
 */
export function auditSummary(app: App): PackSummary[] {
  return (GATES.get(app) ?? []).map(({ pack, acknowledged }) => ({ pack: pack.readPackName, open: 0, acknowledged: acknowledged.size }));
}

/** One line for the end of synth. */
export function formatAuditSummary(rows: readonly PackSummary[]): string {
  if (rows.length === 0) return 'audit: no audit gate in this app';
  return `audit: ${rows.map((r) => `${r.pack} ${r.open} open, ${r.acknowledged} acknowledged`).join('; ')} (npm run audit: per rule, with NIST 800-53 rev 5)`;
}
