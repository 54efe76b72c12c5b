import { regionReachOf } from './reach';
import { Fleet } from './types';

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const COLUMN = 380;
const CELL_H = 46;
const GAP = 10;
const TOP = 160;

/** Colours of a cell by state, and of the canary. */
const FILL: Record<string, string> = { active: '#e8f1fd', draining: '#fff4d6', quarantine: '#fde8e8', canary: '#e9f7ec' };

/**
 * The fleet's topology as one SVG, drawn from the fleet file alone: the tooling account and its
 * pipeline, the router account, each region with its zones, its routers (groups or lanes) and its
 * cells (id, shape, account, canary, state), and which routers reach which cells (`router.reach`):
 * its own region's directly and the others' over cross-region PrivateLink.
 */
export function topologySvg(fleet: Fleet): string {
  const regions = Object.keys(fleet.regions).sort((a, b) =>
    a === fleet.router.homeRegion ? -1 : b === fleet.router.homeRegion ? 1 : a.localeCompare(b),
  );
  const cellsOf = (r: string) => fleet.cells.filter((c) => c.region === r);
  const reaches = new Map(regions.map((r) => [r, regionReachOf(fleet, r)]));
  const reachOf = (r: string) => reaches.get(r)!;
  const tallest = Math.max(1, ...regions.map((r) => cellsOf(r).length));
  const width = Math.max(760, regions.length * COLUMN + 40);
  const routerY = TOP + 56;
  const cellsY = routerY + 150;
  const height = cellsY + tallest * (CELL_H + GAP) + 70;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="13">`,
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="20" y="30" font-size="18" font-weight="600">${esc(fleet.app)}: ${fleet.cells.length} cells in ${regions.length} regions</text>`,
  );
  // The tooling account: the pipeline that deploys everything.
  out.push(
    `<rect x="20" y="48" width="${width - 40}" height="52" rx="6" fill="#f3f0fb" stroke="#8250df"/>`,
    `<text x="34" y="70" font-weight="600">tooling account ${esc(fleet.accounts.tooling)}</text>`,
    `<text x="34" y="89" fill="#57606a">${
      fleet.pipeline
        ? `pipeline in ${esc(fleet.pipeline.region)}: canary cell, single cells, growing waves (${fleet.waves.singleCellWaves} single, ×${fleet.waves.growthFactor}, at most ${fleet.waves.maxCellsPerWave} a wave)`
        : 'no pipeline: cdk deploy per stack'
    }</text>`,
    `<text x="20" y="${TOP - 28}" fill="#57606a">router account ${esc(fleet.accounts.router)}: a router in every region, ${
      fleet.router.reach === 'every-region'
        ? 'each reaching every cell'
        : "each reaching its region's cells and those it is the failover of (router.reach)"
    }</text>`,
    `<text x="20" y="${TOP - 10}" fill="#57606a">home region ${esc(fleet.router.homeRegion)}, mapping bucket ${esc(fleet.router.mappingBucket)}</text>`,
  );
  const routerBox = (i: number) => ({ x: 20 + i * COLUMN + 20, y: routerY, w: COLUMN - 60, h: 92 });
  const cellsBlock = (i: number) => ({ x: 20 + i * COLUMN + 20, y: cellsY, w: COLUMN - 60 });
  regions.forEach((region, i) => {
    const x = 20 + i * COLUMN;
    const zones = fleet.regions[region].availabilityZones;
    out.push(
      `<rect x="${x}" y="${TOP}" width="${COLUMN - 20}" height="${height - TOP - 20}" rx="8" fill="#fafbfc" stroke="#d0d7de"/>`,
      `<text x="${x + 14}" y="${TOP + 24}" font-weight="600" font-size="15">${esc(region)}${region === fleet.router.homeRegion ? ' (home)' : ''}</text>`,
      `<text x="${x + 14}" y="${TOP + 42}" fill="#57606a" font-size="12">zones ${esc(zones.join(' · '))}</text>`,
    );
    const r = routerBox(i);
    const lanes = fleet.router.lanes;
    const groups = lanes
      ? `${lanes.count} lanes, ${lanes.perTenant} a tenant (shuffle-sharded)`
      : fleet.router.groups.map((g) => `${g.name} ${g.tasks} tasks`).join(', ');
    out.push(
      `<rect x="${r.x}" y="${r.y}" width="${r.w}" height="${r.h}" rx="6" fill="#fff8c5" stroke="#bf8700"/>`,
      `<text x="${r.x + 12}" y="${r.y + 22}" font-weight="600">router ${esc(region)}</text>`,
      `<text x="${r.x + 12}" y="${r.y + 42}" fill="#57606a">NLB → HAProxy + mapping agent</text>`,
      `<text x="${r.x + 12}" y="${r.y + 60}" fill="#57606a">${esc(groups)}</text>`,
      `<text x="${r.x + 12}" y="${r.y + 78}" fill="#57606a">${reachOf(region).linked.length} cell links (interface endpoints)</text>`,
    );
    const b = cellsBlock(i);
    cellsOf(region).forEach((cell, n) => {
      const y = b.y + n * (CELL_H + GAP);
      const fill = cell.canary ? FILL.canary : (FILL[cell.state] ?? FILL.active);
      out.push(
        `<rect x="${b.x}" y="${y}" width="${b.w}" height="${CELL_H}" rx="5" fill="${fill}" stroke="${cell.canary ? '#1a7f37' : '#0969da'}"/>`,
        `<text x="${b.x + 10}" y="${y + 19}" font-weight="600">${esc(cell.id)}${cell.canary ? ' · canary' : ''}${cell.state !== 'active' ? ` · ${esc(cell.state)}` : ''}</text>`,
        `<text x="${b.x + 10}" y="${y + 37}" fill="#57606a" font-size="12">${esc(cell.shapeName)} · account ${esc(cell.account)} · ${esc(cell.cidr)}</text>`,
      );
    });
    if (fleet.cellZero && fleet.cellZero.region === region) {
      const y = b.y + cellsOf(region).length * (CELL_H + GAP);
      out.push(
        `<rect x="${b.x}" y="${y}" width="${b.w}" height="${CELL_H}" rx="5" fill="#f6f8fa" stroke="#57606a" stroke-dasharray="5 3"/>`,
        `<text x="${b.x + 10}" y="${y + 19}" font-weight="600">${esc(fleet.cellZero.id)} · cell zero</text>`,
        `<text x="${b.x + 10}" y="${y + 37}" fill="#57606a">the existing service, adopted</text>`,
      );
    }
  });
  // Reach: each router to each region's cells it links; its own region's solid, the others' dashed (cross-region PrivateLink).
  regions.forEach((from, i) => {
    regions.forEach((to, j) => {
      const reached = reachOf(from).linked.filter((c) => c.region === to).length;
      const all = reachOf(to).linked.filter((c) => c.region === to).length;
      if (reached === 0) return;
      const r = routerBox(i);
      const b = cellsBlock(j);
      const x1 = r.x + r.w / 2 + (j - i) * 14;
      const x2 = b.x + b.w / 2 + (i - j) * 14;
      const same = i === j;
      out.push(
        `<path d="M${x1},${r.y + r.h} C${x1},${r.y + r.h + 40} ${x2},${b.y - 40} ${x2},${b.y - 2}" fill="none" stroke="${same ? '#0969da' : '#8c959f'}" stroke-width="${same ? 2 : 1.5}"${
          same ? '' : ' stroke-dasharray="6 4"'
        } marker-end="url(#arrow)"><title>router ${esc(from)} reaches ${reached === all ? 'the' : `${reached} of the`} ${all} cells of ${esc(to)}${same ? '' : ' over cross-region PrivateLink'}</title></path>`,
      );
    });
  });
  out.push(
    `<text x="20" y="${height - 4}" fill="#57606a" font-size="12">solid: a router to its own region's cells; dashed: to another region's, over cross-region PrivateLink. Green: the canary cell.</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

/** The topology as one self-contained page. */
export function topologyHtml(fleet: Fleet): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(fleet.app)}: topology</title>
<style>body{margin:16px;font:14px system-ui,sans-serif;color:#1b1f24}</style></head><body>
${topologySvg(fleet)}</body></html>
`;
}
