import { Client } from 'pg';
import { lookup, MappingDocument } from '../../domain/mapping';
import { LocalCell } from './fleet';
import { FloodSummary, request, startFloodProcess } from './flood';

/** One fault injected into one cell (`cell`), for the length of a measurement window. */
export type FaultKind = 'none' | 'workload-killed' | 'database-stopped' | 'database-slow' | 'poison-request' | 'tenant-flood';

export const FAULTS: readonly FaultKind[] = ['workload-killed', 'database-stopped', 'database-slow', 'poison-request', 'tenant-flood'];

export const FAULT_LABELS: Readonly<Record<FaultKind, string>> = {
  none: 'no fault (baseline)',
  'workload-killed': 'workload process killed',
  'database-stopped': 'database stopped',
  'database-slow': 'database slow (table lock held 300 of every 350 ms)',
  'poison-request': 'poison request, retried by its client',
  'tenant-flood': 'one tenant floods its cell',
};

/** One request of the steady load. */
export interface Sample {
  readonly tenant: string;
  readonly ok: boolean;
  readonly status: number;
  readonly ms: number;
}

export interface ScenarioResult {
  readonly fault: FaultKind;
  readonly cells: number;
  readonly cell: string;
  /** The faulted cell's share of the keyspace (buckets / bucketCount). */
  readonly keyspaceShare: number;
  /** Tenants the window reached (at least one request). */
  readonly tenants: number;
  /** Share of the reached tenants that live in the faulted cell. */
  readonly expectedShare: number;
  /** Share of the reached tenants that saw at least one error. */
  readonly affectedShare: number;
  /** Tenants outside the faulted cell that saw an error (should be 0). */
  readonly othersWithErrors: number;
  readonly othersErrorRate: number;
  readonly othersP99Ms: number;
  /** p99 of the faulty cell's own successful requests (what a slow database costs its tenants). */
  readonly cellP99Ms: number;
  readonly requests: number;
  readonly seconds: number;
  /** The router's longest queue for the faulty cell during the window (requests waiting for one of its `cellMaxConn` slots). */
  readonly cellQueuePeak?: number;
  /** For a flood: what the flooding tenant sent and how it was answered. */
  readonly flood?: FloodSummary;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * `perCell` tenants in every cell of the mapping, named `t-<n>`: the load then covers each cell with
 * exactly its keyspace share of tenants (the mapping spreads buckets evenly), so the expected share
 * of affected tenants is the cell's share, without sampling noise.
 */
export function tenantsPerCell(doc: MappingDocument, perCell: number): Map<string, string[]> {
  const byCell = new Map<string, string[]>(Object.keys(doc.cells).map((id) => [id, []]));
  for (let n = 0; [...byCell.values()].some((list) => list.length < perCell); n++) {
    if (n > perCell * byCell.size * 100) throw new Error('tenantsPerCell: a cell holds too few buckets to fill');
    const tenant = `t-${n}`;
    const result = lookup(doc, tenant);
    if (result.via !== 'bucket') continue;
    const list = byCell.get(result.cell)!;
    if (list.length < perCell) list.push(tenant);
  }
  return byCell;
}

/**
 * Summarizes one window's samples. Shares are taken over the tenants the window reached (at least
 * one request), so a tenant the load never got to counts neither as affected nor as expected:
 * `expectedShare` is the share of those tenants that live in the faulty cell (the cell's keyspace
 * share, up to which tenants the window reached), `affectedShare` the share that saw any error.
 */
export function summarize(
  fault: FaultKind,
  cells: number,
  cell: string,
  keyspaceShare: number,
  cellTenants: ReadonlySet<string>,
  samples: readonly Sample[],
  seconds: number,
): ScenarioResult {
  const seen = new Set(samples.map((s) => s.tenant));
  const failed = new Set(samples.filter((s) => !s.ok).map((s) => s.tenant));
  const others = samples.filter((s) => !cellTenants.has(s.tenant));
  const inCell = samples.filter((s) => cellTenants.has(s.tenant));
  const othersFailed = new Set(others.filter((s) => !s.ok).map((s) => s.tenant));
  return {
    fault,
    cells,
    cell,
    keyspaceShare,
    tenants: seen.size,
    expectedShare: seen.size === 0 ? 0 : [...seen].filter((t) => cellTenants.has(t)).length / seen.size,
    affectedShare: seen.size === 0 ? 0 : failed.size / seen.size,
    othersWithErrors: othersFailed.size,
    othersErrorRate: others.length === 0 ? 0 : others.filter((s) => !s.ok).length / others.length,
    othersP99Ms: percentile(
      others.filter((s) => s.ok).map((s) => s.ms),
      99,
    ),
    cellP99Ms: percentile(
      inCell.filter((s) => s.ok).map((s) => s.ms),
      99,
    ),
    requests: samples.length,
    seconds,
  };
}

export interface LoadOptions {
  readonly routerUrl: string;
  readonly header: string;
  readonly tenants: readonly string[];
  /** Concurrent clients, each issuing its next request when the last one is answered. */
  readonly concurrency: number;
  readonly seconds: number;
}

/** Steady load from many tenants: half writes, half list reads, tenants picked round-robin with an offset per client. */
export async function steadyLoad(o: LoadOptions): Promise<Sample[]> {
  const samples: Sample[] = [];
  const end = performance.now() + o.seconds * 1000;
  await Promise.all(
    Array.from({ length: o.concurrency }, async (_, worker) => {
      for (let i = worker; performance.now() < end; i += o.concurrency) {
        const tenant = o.tenants[i % o.tenants.length];
        const write = Math.floor(i / o.tenants.length) % 2 === 0;
        const r = write
          ? await request(o.routerUrl, o.header, tenant, 'POST', '/v1/items', JSON.stringify({ name: `load-${i}` }))
          : await request(o.routerUrl, o.header, tenant, 'GET', '/v1/items?limit=5');
        samples.push({ tenant, ok: r.status >= 200 && r.status < 300, status: r.status, ms: r.ms });
      }
    }),
  );
  return samples;
}

export interface FaultOptions {
  readonly routerUrl: string;
  readonly header: string;
  /** The poison or flooding tenant: one that lives in the faulty cell. */
  readonly tenantInCell: string;
  /** Concurrent clients of the flooding tenant. @default 128 */
  readonly floodClients?: number;
  /** CPU priority of the flood's own process (19 = lowest; see `startFloodProcess`). @default the caller's */
  readonly floodNice?: number;
}

/** What a fault's injector saw: for a flood, what the flooding tenant sent and how it was answered. */
export interface FaultOutcome {
  readonly flood?: FloodSummary;
}

/** Starts `fault` on `cell`; the returned function ends it and waits until the cell serves again. */
export async function injectFault(fault: FaultKind, cell: LocalCell, o: FaultOptions): Promise<() => Promise<FaultOutcome>> {
  switch (fault) {
    case 'none':
      return async () => ({});
    case 'workload-killed':
      await cell.killWorkload({ restart: false });
      return async () => {
        await cell.startWorkload();
        return {};
      };
    case 'database-stopped':
      await cell.database.stop();
      return async () => {
        await cell.database.start();
        await cell.startWorkload();
        return {};
      };
    case 'database-slow': {
      // Another session keeps taking an ACCESS EXCLUSIVE lock on the items table: every statement on
      // it waits behind the lock, as with a long migration or a runaway transaction.
      const admin = new Client({ connectionString: cell.database.url('cell') });
      // Without a listener, PostgreSQL's 57P01 at a shutdown (a failed run stopping the fleet) reaching
      // the idle client would crash the run; a query in flight still rejects with it, ending the loop.
      admin.on('error', () => undefined);
      await admin.connect();
      let running = true;
      const loop = (async () => {
        while (running) {
          await admin.query('begin');
          await admin.query('lock table items in access exclusive mode');
          await admin.query('select pg_sleep(0.3)');
          await admin.query('commit');
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      return async () => {
        running = false;
        await loop;
        await admin.end();
        return {};
      };
    }
    case 'poison-request': {
      // One client keeps sending a request that crashes the workload, retrying it up to 3 times
      // with a 200 ms back-off, as a client library would; the supervisor restarts the process.
      let running = true;
      const loop = (async () => {
        while (running) {
          for (let attempt = 0; attempt < 4 && running; attempt++) {
            const r = await request(o.routerUrl, o.header, o.tenantInCell, 'POST', '/v1/items', '{"name":"poison"}', { 'x-fault': 'crash' }, 2000);
            if (r.status >= 200 && r.status < 300) break;
            await new Promise((res) => setTimeout(res, 200));
          }
          await new Promise((res) => setTimeout(res, 500));
        }
      })();
      return async () => {
        running = false;
        await loop;
        await cell.startWorkload();
        return {};
      };
    }
    case 'tenant-flood': {
      // One tenant sends as fast as 128 concurrent clients can: more than the router lets into a
      // cell at once (cellMaxConn), so its cell's queue fills. From a process of its own, as the
      // flooding client is another machine: the load generator measuring the others must not wait
      // behind the flood's responses in its own event loop.
      const running = await startFloodProcess({
        routerUrl: o.routerUrl,
        header: o.header,
        tenant: o.tenantInCell,
        clients: o.floodClients ?? 128,
        nice: o.floodNice,
      });
      return async () => ({ flood: await running.stop() });
    }
    default:
      throw new Error(`unknown fault ${fault as string}`);
  }
}

/** The results as a Markdown table (what docs/performance.md shows). */
export function markdownTable(results: readonly ScenarioResult[], baseline: ReadonlyMap<number, number>): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const rows = results.map((r) => {
    const base = baseline.get(r.cells) ?? 0;
    const ratio = base > 0 ? r.othersP99Ms / base : 0;
    return `| ${r.cells} | ${FAULT_LABELS[r.fault]} | ${pct(r.keyspaceShare)} | ${pct(r.expectedShare)} of ${r.tenants} | ${pct(r.affectedShare)} | ${r.othersWithErrors} (${pct(r.othersErrorRate)}) | ${r.othersP99Ms.toFixed(1)} ms | ${base.toFixed(1)} ms | ${r.fault === 'none' ? '-' : `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(0)}%`} | ${r.cellP99Ms ? `${r.cellP99Ms.toFixed(1)} ms` : '-'} | ${r.requests} |`;
  });
  return [
    "| cells | fault (in one cell) | the cell's keyspace share | expected: tenants reached that live in it | tenants with any error | other tenants with errors (error rate) | others' p99 | baseline p99 | p99 vs baseline | faulty cell's p99 (successes) | requests |",
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * The chart: per fault, the share of tenants that saw an error next to the expected share, for each
 * fleet size (left), and the other tenants' p99 against the baseline (right).
 */
export function renderSvg(results: readonly ScenarioResult[], baseline: ReadonlyMap<number, number>): string {
  const faults = FAULTS.filter((f) => results.some((r) => r.fault === f));
  const sizes = [...new Set(results.map((r) => r.cells))].sort((a, b) => a - b);
  const width = 1000;
  const height = 470;
  const panel = { top: 70, bottom: 360, left1: 60, right1: 480, left2: 560, right2: 980 };
  const groupW1 = (panel.right1 - panel.left1) / faults.length;
  const groupW2 = (panel.right2 - panel.left2) / faults.length;
  const colors = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1'];
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  parts.push(
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">Blast radius of one faulty cell (local fleet, measured)</text>`,
  );
  parts.push(
    `<text x="${(panel.left1 + panel.right1) / 2}" y="50" text-anchor="middle" font-size="13">Tenants that saw any error (bar) vs the cell's keyspace share (line)</text>`,
  );
  parts.push(
    `<text x="${(panel.left2 + panel.right2) / 2}" y="50" text-anchor="middle" font-size="13">Other tenants' p99, relative to the fault-free baseline</text>`,
  );
  const maxShare = Math.max(0.3, ...results.map((r) => Math.max(r.affectedShare, r.expectedShare))) * 1.1;
  const y1 = (v: number) => panel.bottom - (v / maxShare) * (panel.bottom - panel.top);
  const ratios = results.filter((r) => r.fault !== 'none').map((r) => (baseline.get(r.cells) ? r.othersP99Ms / baseline.get(r.cells)! : 0));
  const maxRatio = Math.max(1.5, ...ratios) * 1.1;
  const y2 = (v: number) => panel.bottom - (v / maxRatio) * (panel.bottom - panel.top);
  // Axes and grid.
  for (let v = 0; v <= maxShare; v += 0.1) {
    parts.push(`<line x1="${panel.left1}" x2="${panel.right1}" y1="${y1(v)}" y2="${y1(v)}" stroke="#e2e8f0"/>`);
    parts.push(`<text x="${panel.left1 - 6}" y="${y1(v) + 4}" text-anchor="end">${Math.round(v * 100)}%</text>`);
  }
  for (let v = 0; v <= maxRatio; v += 0.5) {
    parts.push(`<line x1="${panel.left2}" x2="${panel.right2}" y1="${y2(v)}" y2="${y2(v)}" stroke="#e2e8f0"/>`);
    parts.push(`<text x="${panel.left2 - 6}" y="${y2(v) + 4}" text-anchor="end">${v.toFixed(1)}×</text>`);
  }
  parts.push(`<line x1="${panel.left2}" x2="${panel.right2}" y1="${y2(1.2)}" y2="${y2(1.2)}" stroke="#e53e3e" stroke-dasharray="6 4"/>`);
  parts.push(`<text x="${panel.left2 + 4}" y="${y2(1.2) - 4}" text-anchor="start" fill="#e53e3e">target: within 20%</text>`);
  faults.forEach((fault, fi) => {
    const label = FAULT_LABELS[fault].split(' (')[0].replace(', retried by its client', '');
    const words = label.split(' ');
    const lines = [words.slice(0, Math.ceil(words.length / 2)).join(' '), words.slice(Math.ceil(words.length / 2)).join(' ')];
    for (const [x0, w] of [
      [panel.left1, groupW1],
      [panel.left2, groupW2],
    ] as const) {
      lines.forEach((line, li) =>
        parts.push(`<text x="${x0 + (fi + 0.5) * w}" y="${panel.bottom + 18 + li * 14}" text-anchor="middle">${escape(line)}</text>`),
      );
    }
    sizes.forEach((size, si) => {
      const r = results.find((x) => x.fault === fault && x.cells === size);
      if (!r) return;
      const barW = (groupW1 * 0.7) / sizes.length;
      const x = panel.left1 + fi * groupW1 + groupW1 * 0.15 + si * barW;
      parts.push(
        `<rect x="${x}" y="${y1(r.affectedShare)}" width="${barW - 3}" height="${panel.bottom - y1(r.affectedShare)}" fill="${colors[si % colors.length]}"/>`,
      );
      parts.push(
        `<line x1="${x - 2}" x2="${x + barW - 1}" y1="${y1(r.expectedShare)}" y2="${y1(r.expectedShare)}" stroke="black" stroke-width="2"/>`,
      );
      parts.push(
        `<text x="${x + (barW - 3) / 2}" y="${y1(r.affectedShare) - 4}" text-anchor="middle" font-size="10">${(r.affectedShare * 100).toFixed(1)}%</text>`,
      );
      const base = baseline.get(size) ?? 0;
      const ratio = base > 0 ? r.othersP99Ms / base : 0;
      const barW2 = (groupW2 * 0.7) / sizes.length;
      const x2 = panel.left2 + fi * groupW2 + groupW2 * 0.15 + si * barW2;
      parts.push(`<rect x="${x2}" y="${y2(ratio)}" width="${barW2 - 3}" height="${panel.bottom - y2(ratio)}" fill="${colors[si % colors.length]}"/>`);
      parts.push(`<text x="${x2 + (barW2 - 3) / 2}" y="${y2(ratio) - 4}" text-anchor="middle" font-size="10">${ratio.toFixed(2)}</text>`);
    });
  });
  for (const [x0, x1] of [
    [panel.left1, panel.right1],
    [panel.left2, panel.right2],
  ]) {
    parts.push(`<line x1="${x0}" x2="${x1}" y1="${panel.bottom}" y2="${panel.bottom}" stroke="black"/>`);
    parts.push(`<line x1="${x0}" x2="${x0}" y1="${panel.top}" y2="${panel.bottom}" stroke="black"/>`);
  }
  // Legend.
  sizes.forEach((size, si) => {
    const x = 60 + si * 130;
    parts.push(`<rect x="${x}" y="${height - 40}" width="14" height="14" fill="${colors[si % colors.length]}"/>`);
    parts.push(`<text x="${x + 20}" y="${height - 29}">${size} cells</text>`);
  });
  parts.push(
    `<line x1="${60 + sizes.length * 130}" x2="${80 + sizes.length * 130}" y1="${height - 33}" y2="${height - 33}" stroke="black" stroke-width="2"/>`,
  );
  parts.push(
    `<text x="${86 + sizes.length * 130}" y="${height - 29}">expected: share of the reached tenants living in the faulty cell (its keyspace share, 1 / cells)</text>`,
  );
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
