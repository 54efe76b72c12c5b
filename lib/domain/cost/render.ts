import { CostLine } from './catalog';
import { FleetCost, OwnerCost } from './estimate';
import { Price } from './prices';

export const formatUsd = (n: number): string =>
  n >= 100 ? `$${Math.round(n).toLocaleString('en-US')}` : `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

const unitPrice = (p: Price) => `$${p.usd}/${p.unit.split(',')[0]}`;
/** `aws.amazon.com/vpc/pricing, 2026-12-04`: where a price was read and when. */
export const priceSource = (p: Price): string =>
  `${p.source.replace(/^https:\/\//, '').replace(/\/$/, '')}, ${p.asOf}${p.method === 'entered' ? '' : ' (Price List API)'}`;

/** An owner's fixed lines, merged by component and price: count, quantity, unit price, month, source. */
function componentRows(lines: readonly CostLine[]): string[][] {
  const by = new Map<string, { line: CostLine; resources: number; quantity: number; usd: number; counted: string; same: boolean }>();
  for (const l of lines) {
    const key = `${l.component}|${l.priceId}`;
    const c = by.get(key);
    if (c) {
      c.resources += 1;
      c.quantity += l.quantity;
      c.usd += l.monthlyUsd;
      c.same &&= c.counted === l.counted;
    } else by.set(key, { line: l, resources: 1, quantity: l.quantity, usd: l.monthlyUsd, counted: l.counted, same: true });
  }
  return [...by.values()]
    .sort((a, b) => b.usd - a.usd)
    .map((c) => [
      c.line.component,
      c.resources === 1
        ? c.counted
        : c.same
          ? `${c.resources} × (${c.counted})`
          : `${c.resources} resources, ${Math.round(c.quantity).toLocaleString('en-US')} ${c.line.price.unit.split(',')[0]}s`,
      unitPrice(c.line.price),
      formatUsd(c.usd),
      priceSource(c.line.price),
    ]);
}

function table(rows: readonly (readonly string[])[], indent = '  ', right: readonly number[] = []): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map(
    (r) =>
      indent +
      r
        .map((cell, i) => (i === r.length - 1 ? cell : right.includes(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
  );
}

function ownerDetail(o: OwnerCost): string[] {
  const rows = componentRows(o.lines);
  const usage = o.usage.map((u) => [`${u.component} (usage)`, u.counted, unitPrice(u.price), formatUsd(u.monthlyUsd), priceSource(u.price)]);
  return table([...rows, ...usage], '    ', [3]);
}

const ownerTitle = (o: OwnerCost) =>
  o.kind === 'cell'
    ? `cell ${o.id} (${o.shape}, ${o.region})`
    : o.kind === 'router'
      ? `router ${o.id}`
      : o.kind === 'tooling'
        ? `tooling (${o.region})`
        : `stack ${o.id} (${o.region})`;

/**
 * `cellctl cost` as text: the totals with their assumptions, the fleet's largest fixed components,
 * each shape's cost a cell with one cell's lines, every router region and the tooling account line
 * by line (each with its price, source and date), a line per cell (`detail`: every cell's lines),
 * the levers, and what drives the usage costs.
 */
export function renderFleetCost(cost: FleetCost, options: { readonly detail?: boolean } = {}): string {
  const out: string[] = [];
  const { totals, assumptions } = cost;
  out.push(
    `${formatUsd(totals.total)} a month: ${formatUsd(totals.fixed)} fixed, ${formatUsd(totals.usage)} usage at ${Math.round(assumptions.utilization * 100)}% of each shape's tested rate and ${assumptions.kibPerRequest} KiB a request`,
    `  cells ${formatUsd(totals.cells)}, routers ${formatUsd(totals.routers)}, tooling ${formatUsd(totals.tooling)}${totals.other ? `, other ${formatUsd(totals.other)}` : ''}`,
    `  on-demand list prices in USD, ${cost.hoursPerMonth} h a month, from lib/domain/cost/prices-table.ts (each line names its source and date)`,
    '',
    'Largest fixed components, whole fleet:',
    ...table(
      cost.components.slice(0, 10).map((c) => [c.component, `${c.resources} resources`, formatUsd(c.monthlyUsd)]),
      '  ',
      [1, 2],
    ),
    '',
    'Per shape, a cell:',
  );
  const cells = cost.owners.filter((o) => o.kind === 'cell');
  for (const s of cost.shapes) {
    out.push(
      `  ${s.shape}: ${formatUsd(s.fixedUsdPerCell)} fixed (+ ${formatUsd(s.routerLinksUsdPerCell)} of router endpoints to it) + ${formatUsd(s.usageUsdPerCell)} usage a cell, ${s.cells} cells`,
    );
    const example = cells.find((c) => c.shape === s.shape);
    if (example && !options.detail) out.push(`    (${example.id}'s lines)`, ...ownerDetail(example));
  }
  out.push('', 'Cells:');
  for (const c of cells) {
    out.push(
      `  ${ownerTitle(c)}: ${formatUsd(c.fixedUsd)} fixed (+ ${formatUsd(c.routerLinksUsd)} router endpoints) + ${formatUsd(c.usageUsd)} usage`,
    );
    if (options.detail) out.push(...ownerDetail(c));
  }
  for (const o of cost.owners.filter((x) => x.kind !== 'cell')) {
    out.push('', `${ownerTitle(o)}: ${formatUsd(o.fixedUsd)} fixed + ${formatUsd(o.usageUsd)} usage (${o.stacks.length} stacks)`, ...ownerDetail(o));
  }
  out.push('', 'Levers:');
  for (const l of cost.levers) {
    const delta = l.alternativeUsd - l.nowUsd;
    out.push(
      `  ${l.title}: ${formatUsd(l.nowUsd)} a month now${delta ? `, ${formatUsd(l.alternativeUsd)} the other way (${delta < 0 ? 'saves' : 'adds'} ${formatUsd(Math.abs(delta))})` : ''}`,
    );
    for (const e of l.effects) out.push(`    - ${e}`);
    out.push(`    (${l.setting})`);
  }
  out.push(
    '',
    'Billed by use, at these prices (the usage lines above estimate load balancer capacity units, WAF requests, endpoint and cross-zone data at the stated traffic; the rest depends on what the workload does):',
  );
  const drivers = new Map<string, { price: Price; drivenBy: string; resources: number }>();
  for (const o of cost.owners) {
    for (const d of o.drivers) {
      const seen = drivers.get(d.priceId);
      drivers.set(d.priceId, { price: d.price, drivenBy: d.drivenBy, resources: (seen?.resources ?? 0) + d.resources });
    }
  }
  out.push(
    ...table(
      [...drivers].map(([id, d]) => [id, unitPrice(d.price), `${d.resources} resources`, d.drivenBy]),
      '  ',
    ),
  );
  return `${out.join('\n')}\n`;
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** `cellctl cost --html`: one self-contained page with the same figures, a bar per component. */
export function renderFleetCostHtml(cost: FleetCost, title: string): string {
  const max = Math.max(1, ...cost.components.map((c) => c.monthlyUsd));
  const bars = cost.components
    .map(
      (c) =>
        `<tr><td>${esc(c.component)}</td><td class="n">${c.resources}</td><td class="n">${formatUsd(c.monthlyUsd)}</td>` +
        `<td class="bar"><span style="width:${((c.monthlyUsd / max) * 100).toFixed(1)}%"></span></td></tr>`,
    )
    .join('\n');
  const ownerRows = (o: OwnerCost) =>
    componentRows(o.lines)
      .map(
        (r) =>
          `<tr><td>${esc(r[0])}</td><td>${esc(r[1])}</td><td class="n">${esc(r[2])}</td><td class="n">${esc(r[3])}</td><td class="src">${esc(r[4])}</td></tr>`,
      )
      .join('\n');
  const owners = cost.owners
    .map(
      (o) =>
        `<details${o.kind === 'cell' ? '' : ' open'}><summary>${esc(ownerTitle(o))}: <b>${formatUsd(o.fixedUsd)}</b> fixed + ${formatUsd(o.usageUsd)} usage</summary>` +
        `<table><tr><th>component</th><th>counted</th><th>unit price</th><th>a month</th><th>source, date</th></tr>${ownerRows(o)}</table></details>`,
    )
    .join('\n');
  const levers = cost.levers
    .map(
      (l) =>
        `<li><b>${esc(l.title)}</b>: ${formatUsd(l.nowUsd)} now, ${formatUsd(l.alternativeUsd)} the other way<ul>${l.effects.map((e) => `<li>${esc(e)}</li>`).join('')}</ul><i>${esc(l.setting)}</i></li>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:6px 0 12px}td,th{padding:3px 10px;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}
td.n{text-align:right;white-space:nowrap}td.src{color:#57606a;font-size:12px}
td.bar{width:320px}td.bar span{display:block;height:12px;background:#2f6fde;border-radius:2px}
.totals{font-size:16px}summary{cursor:pointer;padding:3px 0}
</style></head><body>
<h1>${esc(title)}</h1>
<p class="totals"><b>${formatUsd(cost.totals.total)}</b> a month: ${formatUsd(cost.totals.fixed)} fixed, ${formatUsd(cost.totals.usage)} usage at ${Math.round(cost.assumptions.utilization * 100)}% of each shape's tested rate, ${cost.assumptions.kibPerRequest} KiB a request.
Cells ${formatUsd(cost.totals.cells)}, routers ${formatUsd(cost.totals.routers)}, tooling ${formatUsd(cost.totals.tooling)}. On-demand list prices, USD, ${cost.hoursPerMonth} h a month.</p>
<h2>Fixed cost by component</h2>
<table><tr><th>component</th><th>resources</th><th>a month</th><th></th></tr>
${bars}
</table>
<h2>Per shape</h2>
<ul>${cost.shapes.map((s) => `<li>${esc(s.shape)}: ${formatUsd(s.fixedUsdPerCell)} fixed (+ ${formatUsd(s.routerLinksUsdPerCell)} of router endpoints to it) + ${formatUsd(s.usageUsdPerCell)} usage a cell, ${s.cells} cells</li>`).join('')}</ul>
<h2>Levers</h2>
<ul>${levers}</ul>
<h2>Cells, routers, tooling</h2>
${owners}
</body></html>
`;
}
