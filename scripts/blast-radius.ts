/**
 * `npm run blast-radius`: measures how far one faulty cell reaches. For 4 and 8 cells it starts the
 * local fleet (real PostgreSQL per cell, reference workloads with their fault hooks on, the real
 * router), drives a steady load from many tenants, and injects one fault at a time into one cell:
 * the workload killed, its database stopped, its database slow, a poison request that crashes the
 * workload each time (retried by its client), one tenant flooding the cell. For each it reports the
 * share of tenants that saw any error next to the cell's keyspace share, and the other tenants'
 * error rate and p99 against the fault-free baseline. Writes docs/blast-radius.svg and .json.
 *
 * One machine standing in for AWS, where each cell has its own compute and a flooding client is
 * another machine: the faulty cell's workload and database run at the lowest CPU priority (nice 19)
 * in every window, the baseline included, and the flood comes from a process of its own, also at
 * nice 19. What they burn then comes out of CPU the rest of the fleet leaves idle; the router, the
 * other cells and the load generator keep normal priority. `--shared-cpu` runs everything at one
 * priority instead (every process competing for the same cores).
 *
 * Options: --cells 4,8  --seconds 8  --per-cell 10  --concurrency 16  --out docs
 *          --only tenant-flood,…  (these faults only, after the baseline)  --shared-cpu
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parseArgs } from 'util';
import {
  FAULT_LABELS,
  FAULTS,
  FaultKind,
  injectFault,
  markdownTable,
  renderSvg,
  ScenarioResult,
  startLocalFleet,
  steadyLoad,
  summarize,
  tenantsPerCell,
} from '../lib/operations/local-fleet';
import { bucketCounts, lookup, parseMapping } from '../lib/domain/mapping';
import { MAP_FILES } from '../lib/runtime/router/haproxy-config';
import { RuntimeApi } from '../lib/runtime/router/runtime-api';

const { values } = parseArgs({
  options: {
    cells: { type: 'string', default: '4,8' },
    seconds: { type: 'string', default: '8' },
    'per-cell': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    out: { type: 'string', default: 'docs' },
    only: { type: 'string' },
    'shared-cpu': { type: 'boolean', default: false },
  },
});
const sizes = values.cells!.split(',').map(Number);
const seconds = Number(values.seconds);
const perCell = Number(values['per-cell']);
const concurrency = Number(values.concurrency);
const faults = values.only === undefined ? FAULTS : values.only.split(',').map((f) => f.trim());
const unknown = faults.filter((f) => !FAULTS.includes(f as FaultKind));
if (unknown.length > 0) {
  process.stderr.write(`blast-radius: --only ${unknown.join(',')}: unknown fault; give a comma-separated list of ${FAULTS.join(', ')}\n`);
  process.exit(2);
}
for (const [name, value] of [
  ['cells', sizes],
  ['seconds', [seconds]],
  ['per-cell', [perCell]],
  ['concurrency', [concurrency]],
] as const) {
  if (value.some((v) => !Number.isFinite(v) || v <= 0)) {
    process.stderr.write(
      `blast-radius: --${name} ${values[name]}: give a positive number${name === 'cells' ? ' (or a comma-separated list, e.g. 4,8)' : ''}\n`,
    );
    process.exit(2);
  }
}
/** CPU priority of the faulty cell's processes and of the flood (see the header comment). */
const isolatedNice = values['shared-cpu'] ? undefined : 19;
const header = 'x-tenant-id';
const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const log = (line: string) => process.stderr.write(`${line}\n`);

async function measure(cells: number): Promise<{ results: ScenarioResult[]; baselineP99: number }> {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `blast-radius-${cells}-`));
  fs.chmodSync(stateDir, 0o755);
  log(`starting a local fleet of ${cells} cells in ${stateDir}`);
  const fleet = await startLocalFleet({ cells, port: 0, stateDir, testFaults: true, fresh: true, log });
  try {
    const parsed = parseMapping(fs.readFileSync(fleet.mappingFile, 'utf8'));
    if (!parsed.ok) throw new Error('the fleet mapping is invalid');
    const doc = parsed.document;
    const byCell = tenantsPerCell(doc, perCell);
    // Interleaved, so each client cycles through every cell.
    const tenants: string[] = [];
    for (let i = 0; i < perCell; i++) for (const list of byCell.values()) tenants.push(list[i]);
    const faulty = fleet.cell('cell-2');
    const cellTenants = new Set(byCell.get(faulty.id));
    const keyspaceShare = (bucketCounts(doc).get(faulty.id) ?? 0) / doc.bucketCount;
    // The poison and flood tenants live in the faulty cell but are not part of the measured load.
    let n = 0;
    const extraTenant = (prefix: string) => {
      for (; ; n++) if (lookup(doc, `${prefix}-${n}`).cell === faulty.id) return `${prefix}-${n++}`;
    };
    const poisonTenant = extraTenant('poison');
    const floodTenant = extraTenant('flood');

    if (isolatedNice !== undefined) faulty.setPriority(isolatedNice);
    log(
      `${cells} cells: ${faulty.id}'s workload and database ${isolatedNice === undefined ? 'at the same CPU priority as everything else (--shared-cpu)' : `at nice ${isolatedNice}, the flood from its own process at nice ${isolatedNice} (each standing in for its own machine)`}`,
    );
    // The router's queue for the faulty cell: its peak in each window shows whether a flood saturated it.
    const api = new RuntimeApi(path.join(fleet.router!.stateDir, 'admin.sock'));
    const faultySlot = [...(await api.showMap(path.join(fleet.router!.stateDir, MAP_FILES.cells)))].find(([, cell]) => cell === faulty.id)?.[0];

    log(`${cells} cells: warming up`);
    await steadyLoad({ routerUrl: fleet.routerUrl, header, tenants, concurrency, seconds: 3 });
    const results: ScenarioResult[] = [];
    const run = async (fault: FaultKind) => {
      log(`${cells} cells: ${FAULT_LABELS[fault]} in ${faulty.id} for ${seconds} s (load average ${loadAverage()})`);
      const end = await injectFault(fault, faulty, {
        routerUrl: fleet.routerUrl,
        header,
        tenantInCell: fault === 'poison-request' ? poisonTenant : floodTenant,
        floodNice: isolatedNice,
      });
      // Resets the peaks (queue, sessions), not the totals.
      await api.send('clear counters');
      const samples = await steadyLoad({ routerUrl: fleet.routerUrl, header, tenants, concurrency, seconds });
      const queuePeak = Number((await api.stats()).find((r) => r.pxname === faultySlot && r.svname === 'BACKEND')?.qmax ?? NaN);
      const outcome = await end();
      const result: ScenarioResult = {
        ...summarize(fault, cells, faulty.id, keyspaceShare, cellTenants, samples, seconds),
        ...outcome,
        cellQueuePeak: queuePeak,
      };
      results.push(result);
      log(
        `  affected ${(result.affectedShare * 100).toFixed(1)}% (expected ${(result.expectedShare * 100).toFixed(1)}%), others: ${result.othersWithErrors} tenants with errors, p99 ${result.othersP99Ms.toFixed(1)} ms, ${result.requests} requests; router queue for ${faulty.id} peaked at ${queuePeak}`,
      );
      if (outcome.flood) {
        const served = Object.entries(outcome.flood.statuses)
          .filter(([status]) => /^2/.test(status))
          .reduce((n, [, c]) => n + c, 0);
        log(
          `  the flood: ${outcome.flood.requests} requests from ${outcome.flood.clients} clients, ${served} served, ${outcome.flood.statuses['503'] ?? 0} refused with 503, ${outcome.flood.statuses['0'] ?? 0} failed at the socket`,
        );
      }
      // Recovered before the next fault: every tenant of the faulty cell is served again.
      // Generous: a restart at nice 19 on a busy machine is slow, and this wait is not measured.
      const deadline = Date.now() + 120_000;
      for (;;) {
        const check = await steadyLoad({ routerUrl: fleet.routerUrl, header, tenants: [...cellTenants].slice(0, 5), concurrency: 1, seconds: 0.2 });
        if (check.length > 0 && check.every((s) => s.ok)) break;
        if (Date.now() > deadline) throw new Error(`${faulty.id} did not recover after ${fault}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    await run('none');
    for (const fault of faults as FaultKind[]) await run(fault);
    return { results, baselineP99: results[0].othersP99Ms };
  } finally {
    await fleet.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const all: ScenarioResult[] = [];
  const baseline = new Map<number, number>();
  for (const cells of sizes) {
    const { results, baselineP99 } = await measure(cells);
    all.push(...results);
    baseline.set(cells, baselineP99);
  }
  const table = markdownTable(all, baseline);
  process.stdout.write(`${table}\n`);
  fs.mkdirSync(values.out!, { recursive: true });
  fs.writeFileSync(path.join(values.out!, 'blast-radius.svg'), renderSvg(all, baseline));
  fs.writeFileSync(
    path.join(values.out!, 'blast-radius.json'),
    `${JSON.stringify({ measuredAt: new Date().toISOString(), loadAverageAtEnd: loadAverage(), faultyCellNice: isolatedNice ?? 0, floodNice: isolatedNice ?? 0, seconds, perCell, concurrency, machine: `${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}`, results: all }, null, 2)}\n`,
  );
  process.stderr.write(`wrote ${path.join(values.out!, 'blast-radius.svg')} and blast-radius.json\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`blast-radius: ${error.stack ?? error.message}\n`);
  process.exit(1);
});
