import { Finding } from './findings';

/** How a pack's findings are enforced. */
export type Enforcement = 'synth' | 'audit' | 'advisory';

/** Why the open findings of some rules of an advisory pack stay open (shown next to them on the audit page). */
export interface OpenReason {
  /** Rule ids as `baseRule` gives them: `NIST.800.53.R5-IAMNoInlinePolicy`. */
  readonly rules: readonly string[];
  readonly why: string;
}

export interface PackPolicy {
  readonly pack: string;
  readonly enforcement: Enforcement;
  readonly why: string;
  /** Advisory packs: why what stays open is open, per rule. @default none */
  readonly openReasons?: readonly OpenReason[];
}

export interface Counts {
  readonly open: number;
  readonly acknowledged: number;
}

export interface RuleCounts extends Counts {
  readonly pack: string;
  /** Rule id without the finding in brackets: `AwsSolutions-IAM5`, `CellIsolation-CI1`, `CT.S3.PR.1`. */
  readonly rule: string;
  readonly description: string;
}

/** Everything `npm run audit` prints, as JSON (`--json`) or HTML (`--report FILE.html`). */
export interface AuditReport {
  readonly app: string;
  readonly generatedAt: string;
  readonly stacks: readonly string[];
  readonly packs: readonly (PackPolicy & Counts)[];
  /** Per pack and rule, across the fleet. */
  readonly rules: readonly RuleCounts[];
  /** Per stack, pack and rule. */
  readonly byStack: readonly {
    readonly stack: string;
    readonly pack: string;
    readonly rule: string;
    readonly open: number;
    readonly acknowledged: number;
  }[];
  readonly findings: readonly Finding[];
}

/** `AwsSolutions-IAM5[Action::s3:*]` → `AwsSolutions-IAM5`. */
export const baseRule = (rule: string) => rule.replace(/\[.*\]$/, '');

const count = (findings: readonly Finding[]): Counts => ({
  open: findings.filter((f) => !f.acknowledgement).length,
  acknowledged: findings.filter((f) => f.acknowledgement).length,
});

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

/** Counts findings per pack, per rule and per stack. Pure. */
export function buildReport(input: {
  app: string;
  generatedAt: Date;
  stacks: readonly string[];
  policies: readonly PackPolicy[];
  findings: readonly Finding[];
}): AuditReport {
  const { findings } = input;
  const rules = [...groupBy(findings, (f) => `${f.pack}\0${baseRule(f.rule)}`).values()]
    .map((fs) => ({
      pack: fs[0].pack,
      rule: baseRule(fs[0].rule),
      description: fs[0].description,
      ...count(fs),
    }))
    .sort((a, b) => a.pack.localeCompare(b.pack) || a.rule.localeCompare(b.rule, undefined, { numeric: true }));
  const byStack = [...groupBy(findings, (f) => `${f.stack}\0${f.pack}\0${baseRule(f.rule)}`).values()].map((fs) => ({
    stack: fs[0].stack,
    pack: fs[0].pack,
    rule: baseRule(fs[0].rule),
    ...count(fs),
  }));
  return {
    app: input.app,
    generatedAt: input.generatedAt.toISOString(),
    stacks: input.stacks,
    packs: input.policies.map((p) => ({ ...p, ...count(findings.filter((f) => f.pack === p.pack)) })),
    rules,
    byStack,
    findings,
  };
}

/** The packs whose open findings fail the audit (`synth` and `audit` enforcement). */
export function failingPacks(report: AuditReport): string[] {
  return report.packs.filter((p) => p.enforcement !== 'advisory' && p.open > 0).map((p) => p.pack);
}

/** Fixed-width tables: totals per pack, then open / acknowledged per rule. */
export function formatText(report: AuditReport): string {
  const width = Math.max(24, ...report.rules.map((r) => r.rule.length));
  const row = (name: string, c: Counts, extra = '') =>
    `${name.padEnd(width)}  ${String(c.open).padStart(5)}  ${String(c.acknowledged).padStart(12)}${extra}`;
  const lines = [
    `Audited ${report.stacks.length} stack(s) of ${report.app}.`,
    '',
    `${'pack'.padEnd(width)}  ${'open'.padStart(5)}  ${'acknowledged'.padStart(12)}  enforced by`,
  ];
  for (const p of report.packs) lines.push(row(p.pack, p, `  ${p.enforcement}`));
  for (const p of report.packs) {
    const own = report.rules.filter((r) => r.pack === p.pack);
    if (own.length === 0) continue;
    lines.push('', `-- ${p.pack}`);
    for (const r of own) lines.push(row(r.rule, r));
  }
  const open = report.findings.filter((f) => !f.acknowledgement && report.packs.find((p) => p.pack === f.pack)?.enforcement !== 'advisory');
  if (open.length > 0) {
    lines.push('', 'Open findings that fail the audit:');
    for (const f of open) lines.push(`  ${f.rule} on ${f.resource} (${f.stack}): ${f.description}`);
  }
  return `${lines.join('\n')}\n`;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
/** Escaped prose with `code` spans, as the reasons are written. */
const prose = (s: string) => escape(s).replace(/`([^`]+)`/g, '<code>$1</code>');

/** The reason an open finding's rule stays open, from its pack's policy; undefined when none is recorded. */
export function openReason(report: AuditReport, pack: string, rule: string): string | undefined {
  return report.packs.find((p) => p.pack === pack)?.openReasons?.find((r) => r.rules.includes(baseRule(rule)))?.why;
}

/** A rule's description with cdk-nag's long `(Control IDs: …)` tail in small print. */
function described(description: string): string {
  const at = description.indexOf(' - (Control IDs:');
  return at < 0 ? escape(description) : `${escape(description.slice(0, at))} <small>${escape(description.slice(at + 3))}</small>`;
}

/**
 * A self-contained HTML page an auditor can attach to a review: a summary per pack (with how it
 * is enforced), per-rule and per-stack tables, every acknowledgment with its reason and construct
 * path, and every open finding.
 */
export function renderHtml(report: AuditReport): string {
  const e = escape;
  const advisory = new Set(report.packs.filter((p) => p.enforcement === 'advisory').map((p) => p.pack));
  // Red only where an open finding fails the audit; an advisory pack's open findings are amber.
  const cls = (c: Counts & { pack: string }) => (c.open === 0 ? 'clean' : advisory.has(c.pack) ? 'advisory' : 'open');
  const policyRows = report.packs
    .map(
      (p) =>
        `<tr class="${cls(p)}"><td>${e(p.pack)}</td><td class="n">${p.open}</td><td class="n">${p.acknowledged}</td><td>${e(p.enforcement)}</td><td>${prose(p.why)}</td></tr>`,
    )
    .join('\n');
  const gating = report.packs.filter((p) => p.enforcement !== 'advisory');
  const verdict = gating.every((p) => p.open === 0)
    ? `<p class="verdict pass">PASS: no open finding in ${gating.map((p) => e(p.pack)).join(', ')}; every other finding of those packs is acknowledged below with its reason.</p>`
    : `<p class="verdict fail">FAIL: open findings in ${gating
        .filter((p) => p.open > 0)
        .map((p) => e(p.pack))
        .join(', ')}.</p>`;
  const rulesByPack = report.packs
    .map((p) => {
      const own = report.rules.filter((r) => r.pack === p.pack);
      if (own.length === 0) return `<h3>${e(p.pack)}</h3><p>No findings: every rule of the pack passed on every resource.</p>`;
      return `<h3>${e(p.pack)}</h3><table><thead><tr><th>rule</th><th>open</th><th>acknowledged</th><th>what it checks</th></tr></thead><tbody>
${own.map((r) => `<tr class="${cls(r)}"><td><code>${e(r.rule)}</code></td><td class="n">${r.open}</td><td class="n">${r.acknowledged}</td><td>${e(r.description)}</td></tr>`).join('\n')}
</tbody></table>`;
    })
    .join('\n');
  const stackRows = report.stacks
    .map((stack) => {
      const cells = report.packs
        .map((p) => {
          const c = report.byStack.filter((b) => b.stack === stack && b.pack === p.pack);
          const open = c.reduce((n, b) => n + b.open, 0);
          const acknowledged = c.reduce((n, b) => n + b.acknowledged, 0);
          // The column names the pack: its rules without the pack's prefix.
          const rules = c.filter((b) => b.open > 0).map((b) => b.rule.replace(`${p.pack}-`, ''));
          return `<td class="n ${cls({ pack: p.pack, open, acknowledged })}">${open} / ${acknowledged}${rules.length ? `<br><small>${rules.map(e).join(', ')}</small>` : ''}</td>`;
        })
        .join('');
      return `<tr><td>${e(stack)}</td>${cells}</tr>`;
    })
    .join('\n');
  const acks = report.findings.filter((f) => f.acknowledgement);
  const ackGroups = [...groupBy(acks, (f) => `${f.pack}\0${f.rule}\0${f.acknowledgement!.reason}`).values()];
  const ackRows = ackGroups
    .map(
      (fs) =>
        `<tr><td>${e(fs[0].pack)}</td><td><code>${e(fs[0].rule)}</code></td><td>${prose(fs[0].acknowledgement!.reason)}</td><td class="paths">${fs.map((f) => `<div><code>${e(f.resource)}</code>${f.acknowledgement!.at !== f.resource ? ` <small>(acknowledged on <code>${e(f.acknowledgement!.at)}</code>)</small>` : ''}</div>`).join('')}</td></tr>`,
    )
    .join('\n');
  const open = report.findings.filter((f) => !f.acknowledgement);
  // One row per pack and rule: why it is open (an advisory pack's recorded reason, or that it fails
  // the audit), what the rule checks, and every resource it is open on.
  const openGroups = [...groupBy(open, (f) => `${f.pack}\0${baseRule(f.rule)}`).values()];
  const openRows = openGroups
    .map((fs) => {
      const { pack, rule } = { pack: fs[0].pack, rule: baseRule(fs[0].rule) };
      const reason = openReason(report, pack, rule);
      const why = !advisory.has(pack)
        ? '<strong>Fails the audit</strong>: fix it, or acknowledge it on the narrowest construct with a reason.'
        : reason
          ? prose(reason)
          : '<strong>No reason recorded</strong> for this advisory rule: add one to the pack policy (<code>lib/app/audit/run.ts</code>).';
      const resources = fs
        .map((f) => `<div><code>${e(f.resource)}</code>${f.rule !== rule ? ` <small>${e(f.rule.slice(rule.length))}</small>` : ''}</div>`)
        .join('');
      const listed =
        fs.length > 3
          ? `<details><summary>${fs.length} resources in ${new Set(fs.map((f) => f.stack)).size} stacks</summary>${resources}</details>`
          : resources;
      return `<tr class="${advisory.has(pack) ? 'advisory' : 'open'}"><td>${e(pack)}</td><td><code>${e(rule)}</code></td><td class="n">${fs.length}</td><td class="why">${why}</td><td>${described(fs[0].description)}</td><td class="paths">${listed}</td></tr>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Audit report: ${e(report.app)}</title>
<style>
*,*::before,*::after{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;padding:24px;color:#1b1f24;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px} h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;width:100%;margin:6px 0 12px} th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:break-word}
table.open-findings{table-layout:fixed} col.pack{width:10%} col.rule{width:18%} col.count{width:5%} col.why{width:27%} col.what{width:17%} col.where{width:23%}
summary{cursor:pointer;color:#0969da} td.n small{display:block;white-space:normal;text-align:left;overflow-wrap:anywhere} td.why,td.paths{overflow-wrap:anywhere}
th{background:#f6f8fa} td.n{text-align:right;white-space:nowrap} tr.open td,td.open{background:#ffebe9} tr.advisory td,td.advisory{background:#fff8c5}
tr.clean td:first-child{border-left:4px solid #2da44e} tr.open td:first-child{border-left:4px solid #cf222e} tr.advisory td:first-child{border-left:4px solid #bf8700}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;overflow-wrap:anywhere} .paths div{margin:1px 0} small{color:#57606a}
.verdict{font-weight:600;padding:8px 12px;border-radius:6px} .pass{background:#dafbe1;color:#116329} .fail{background:#ffebe9;color:#a40e26}
.meta{color:#57606a}
</style></head><body>
<h1>Audit report: ${e(report.app)}</h1>
<p class="meta">Generated ${e(report.generatedAt)} by <code>npm run audit</code> over ${report.stacks.length} synthesized stacks (pipeline, routers and every cell, pipeline stages included).</p>
<h2>Summary</h2>
${verdict}
<table><thead><tr><th>pack</th><th>open</th><th>acknowledged</th><th>enforced by</th><th>why</th></tr></thead><tbody>
${policyRows}
</tbody></table>
<h2>Rules per pack</h2>
${rulesByPack}
<h2>Per stack (open / acknowledged)</h2>
<table><thead><tr><th>stack</th>${report.packs.map((p) => `<th>${e(p.pack)}</th>`).join('')}</tr></thead><tbody>
${stackRows}
</tbody></table>
<h2 id="open">Open findings (${open.length} on ${openGroups.length} rules)</h2>
${
  open.length
    ? `<table class="open-findings"><colgroup><col class="pack"><col class="rule"><col class="count"><col class="why"><col class="what"><col class="where"></colgroup>
<thead><tr><th>pack</th><th>rule</th><th>open</th><th>why it is open</th><th>what the rule checks</th><th>resources (construct paths)</th></tr></thead><tbody>\n${openRows}\n</tbody></table>`
    : '<p>None.</p>'
}
<h2>Acknowledgements (${acks.length} findings, ${ackGroups.length} reasons)</h2>
<table><thead><tr><th>pack</th><th>rule</th><th>reason</th><th>resources (construct paths)</th></tr></thead><tbody>
${ackRows}
</tbody></table>
</body></html>
`;
}
