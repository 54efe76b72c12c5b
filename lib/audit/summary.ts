import { Stack } from 'aws-cdk-lib';
import { NagPack } from 'cdk-nag';

/** Findings of one rule across the audited stacks. */
export interface RuleSummary {
  readonly pack: string;
  readonly rule: string;
  readonly open: number;
  readonly acknowledged: number;
}

/**
 * Runs `pack` over each stack and counts, per rule, the open findings and the acknowledged ones.
 * cdk-nag 3 reports only open findings; acknowledged ones are counted by observing its
 * acknowledgment check, which it calls only for non-compliant resources.
 */
export function auditStacks(pack: NagPack, stacks: readonly Stack[]): RuleSummary[] {
  const acknowledged = new Map<string, number>();
  const hooked = pack as unknown as { isAcknowledged: (node: unknown, ruleId: string) => boolean };
  const check = hooked.isAcknowledged.bind(pack);
  if (typeof check !== 'function') throw new Error('auditStacks: this cdk-nag version has no acknowledgment check to observe');
  hooked.isAcknowledged = (node, ruleId) => {
    const hit = check(node, ruleId);
    if (hit) acknowledged.set(ruleId, (acknowledged.get(ruleId) ?? 0) + 1);
    return hit;
  };
  const open = new Map<string, number>();
  for (const stack of stacks) {
    for (const violation of pack.validateScope(stack).violations) {
      open.set(violation.ruleName, (open.get(violation.ruleName) ?? 0) + violation.violatingResources.length);
    }
  }
  const rules = [...new Set([...open.keys(), ...acknowledged.keys()])].sort();
  return rules.map((rule) => ({ pack: pack.readPackName, rule, open: open.get(rule) ?? 0, acknowledged: acknowledged.get(rule) ?? 0 }));
}

/** A fixed-width table of the summary, with totals per pack. */
export function formatAudit(rows: readonly RuleSummary[]): string {
  const width = Math.max(4, ...rows.map((r) => r.rule.length));
  const lines = [`${'rule'.padEnd(width)}  ${'open'.padStart(5)}  ${'acknowledged'.padStart(12)}`];
  for (const pack of [...new Set(rows.map((r) => r.pack))]) {
    const own = rows.filter((r) => r.pack === pack);
    lines.push(`-- ${pack}`);
    for (const r of own) lines.push(`${r.rule.padEnd(width)}  ${String(r.open).padStart(5)}  ${String(r.acknowledged).padStart(12)}`);
    const sum = (k: 'open' | 'acknowledged') => own.reduce((n, r) => n + r[k], 0);
    lines.push(`${`${pack} total`.padEnd(width)}  ${String(sum('open')).padStart(5)}  ${String(sum('acknowledged')).padStart(12)}`);
  }
  return lines.join('\n');
}
