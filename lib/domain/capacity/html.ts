import { CapacityPlan } from './plan';
import { CELL_SIGNALS, CellSignalName, SIGNAL_LABELS, signalPeakText, SignalReading } from './signals';
import { CellCapacity, CellStatus, FleetCapacity } from './types';

/** Bar colours, one per status (tests find them in a screenshot). */
export const STATUS_COLOURS: Readonly<Record<CellStatus, string>> = { ok: '#2da44e', hot: '#d4a72c', full: '#cf222e' };
/** The target line across every bar, and the tested limit at the bar's end. */
export const TARGET_COLOUR = '#0969da';
export const LIMIT_COLOUR = '#1b1f24';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const rps = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
const pct = (n: number) => `${Math.round(n * 100)}%`;

const signalValue = (name: CellSignalName, r: SignalReading | undefined) => signalPeakText(name, r) ?? '<span class="missing">missing</span>';

/** The cell's own signals, one a line; the one that made it hot in bold. */
function signalsCell(c: CellCapacity): string {
  if (c.signalsError) return `<span class="missing">not read</span><div class="sub">${escape(c.signalsError)}</div>`;
  return CELL_SIGNALS.map((name) => {
    const line = `${SIGNAL_LABELS[name]} ${signalValue(name, c.signals?.[name])}`;
    return (c.statusBy as readonly string[]).includes(name) ? `<strong>${line}</strong>` : line;
  }).join('<br>');
}

/** What made the cell hot or full, under its status. */
const causes = (c: CellCapacity) =>
  c.statusBy.length === 0
    ? ''
    : `<div class="sub">by ${c.statusBy.map((s) => (s === 'rate' ? 'rate' : s === 'tenants' ? 'tenants' : SIGNAL_LABELS[s])).join(', ')}</div>`;

/**
 * One self-contained page (no script, no external resource): per cell a bar of its peak rate on a
 * scale where the tested limit sits at two thirds of the width (room to show a cell above it), the
 * target as a line, the top tenants; then the fleet's needs and the plan.
 */
export function capacityHtml(capacity: FleetCapacity, plan: CapacityPlan | undefined, title: string): string {
  const scale = 1.5; // the bar's full width is 150% of the tested limit
  const bar = (utilisation: number) => Math.min(100, (utilisation / scale) * 100);
  const signalled = capacity.cells.some((c) => c.signals || c.signalsError);
  const rows = capacity.cells
    .map(
      (c) => `
    <tr>
      <th scope="row">${escape(c.cell)}<div class="sub">${escape(c.region)} · ${escape(c.shape)}${c.state === 'active' ? '' : ` · ${escape(c.state)}`}</div></th>
      <td class="barcell">
        <div class="track" role="img" aria-label="${escape(c.cell)}: peak ${rps(c.peakRps)} req/s, ${pct(c.utilisation)} of tested, status ${c.status}">
          <div class="bar ${c.status}" style="width:${bar(c.utilisation).toFixed(2)}%"></div>
          <div class="target" style="left:${bar(capacity.settings.targetUtilisation).toFixed(2)}%"></div>
          <div class="limit" style="left:${bar(1).toFixed(2)}%"></div>
        </div>
        <div class="sub">peak ${rps(c.peakRps)} · now ${rps(c.currentRps)} of ${rps(c.testedRps)} req/s tested (${pct(c.utilisation)}; ${pct(c.zoneLossUtilisation)} after losing a zone)</div>
      </td>
      <td><span class="status ${c.status}">${c.status}</span>${causes(c)}</td>
      <td>${c.activeTenants} / ${c.maxTenants}</td>${
        signalled
          ? `
      <td class="signals">${signalsCell(c)}</td>`
          : ''
      }
      <td>${
        c.topTenants
          .slice(0, 5)
          .map((t) => `${escape(t.tenant)} <span class="sub">${rps(t.peakRps ?? t.rps)}</span>`)
          .join('<br>') || '<span class="sub">none</span>'
      }</td>
    </tr>`,
    )
    .join('');
  const moves =
    plan && plan.moves.length > 0
      ? `<table><thead><tr><th>tenant</th><th>as</th><th>from</th><th>to</th><th>peak req/s</th></tr></thead><tbody>${plan.moves
          .map(
            (m) => `
      <tr><td>${escape(m.tenant)}</td><td>${m.bucket === undefined ? 'tenant (pin)' : `bucket ${m.bucket}`}</td><td>${escape(m.from)}</td><td>${escape(m.to)}</td><td>${rps(m.peakRps)}</td></tr>`,
          )
          .join('')}</tbody></table>`
      : '<p>No move needed: every cell is under its target.</p>';
  const after = plan
    ? `<p>${plan.cells
        .filter((c) => c.peakRpsAfter !== c.peakRpsBefore)
        .map((c) => `${escape(c.cell)}: ${rps(c.peakRpsBefore)} → ${rps(c.peakRpsAfter)} req/s (target ${rps(c.targetRps)})`)
        .join(' · ')}</p>`
    : '';
  const adds =
    plan && plan.cellsToAdd.length > 0
      ? `<p class="warn">Moves cannot bring every cell under its target: add ${plan.cellsToAdd.map((a) => `${a.count} cell(s) of shape ${escape(a.shape)} in ${escape(a.region)}`).join(', ')}, then plan again.</p>`
      : '';
  const big =
    capacity.largeTenants.length > 0
      ? `<p class="warn">Large tenants (above ${pct(capacity.settings.largeTenantShare)} of a cell's target): ${capacity.largeTenants.map((t) => `${escape(t.tenant)} on ${escape(t.cell)} (${rps(t.peakRps)} req/s)`).join(', ')}: candidates for a dedicated cell or a pin.</p>`
      : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; color: ${LIMIT_COLOUR}; margin: 24px; }
  table { border-collapse: collapse; width: 100%; margin: 12px 0 24px; }
  th, td { text-align: left; vertical-align: top; padding: 8px 10px; border-bottom: 1px solid #d0d7de; }
  thead th { background: #f6f8fa; }
  .sub { color: #57606a; font-size: 12px; font-weight: normal; }
  .barcell { width: 45%; }
  .track { position: relative; height: 22px; background: #eaeef2; }
  .bar { position: absolute; left: 0; top: 0; bottom: 0; }
  .bar.ok, .status.ok { background: ${STATUS_COLOURS.ok}; }
  .bar.hot, .status.hot { background: ${STATUS_COLOURS.hot}; }
  .bar.full, .status.full { background: ${STATUS_COLOURS.full}; }
  .status { color: #fff; padding: 2px 8px; border-radius: 10px; }
  .target { position: absolute; top: -4px; bottom: -4px; width: 3px; background: ${TARGET_COLOUR}; }
  .limit { position: absolute; top: -4px; bottom: -4px; width: 3px; background: ${LIMIT_COLOUR}; }
  .warn { background: #fff8c5; padding: 8px 12px; }
  .signals { white-space: nowrap; font-size: 13px; }
  .signals .sub { white-space: normal; max-width: 240px; }
  .missing { color: #57606a; font-style: italic; }
</style></head>
<body>
<h1>${escape(title)}</h1>
<p>Target ${pct(capacity.settings.targetUtilisation)} of each shape's tested rate (blue line); tested limit (black line).${signalled ? ` A cell that uses more than ${pct(capacity.settings.targetUtilisation)} of its maximum compute, or whose database CPU peaks above it, is hot whatever its rate.` : ''} Peak ${rps(capacity.peakRps)} req/s:
${capacity.cellsNeeded} cells needed at the target including ${capacity.settings.spareCells} spare, ${capacity.activeCells} active${capacity.cellsToAdd > 0 ? `: add ${capacity.cellsToAdd}` : ''}.</p>
${big}
<table><thead><tr><th>cell</th><th>peak rate against target and tested limit</th><th>status</th><th>tenants</th>${signalled ? '<th>cell signals (peak)</th>' : ''}<th>top tenants (peak req/s)</th></tr></thead><tbody>${rows}
</tbody></table>
<h2>Plan</h2>
${moves}
${after}
${adds}
</body></html>
`;
}
