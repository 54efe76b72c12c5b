import * as path from 'path';
import { Command } from 'commander';
import {
  CapacityPlan,
  capacityHtml,
  CELL_SIGNALS,
  CellCapacity,
  CellLimits,
  cellLimitsOf,
  CellLoad,
  CellSignalName,
  FleetCapacity,
  hotByCpu,
  judgeFleet,
  movePlanOf,
  parseSignalsRecord,
  place,
  planCapacity,
  SIGNAL_LABELS,
  signalPeakText,
  SignalReading,
  StatusCause,
} from '../domain/capacity';
import { Fleet } from '../domain/fleet';
import { cellMetricsReaderRoleName, cellSignalsParameter } from '../domain/names';
import { homeTableOf, keyProblem, lookup, MappingDocument } from '../domain/mapping';
import { readLocalFleet } from '../operations/moves/local-fleet';
import { cellLoadsOf, overWindow, readTenantRates } from '../runtime/router/tenant-rates';
import { RuntimeApi } from '../runtime/router/runtime-api';
import { fleetFrom } from './context';
import { shapeCostsOf } from './cost-commands';
import { readMappingFile } from './mapping-commands';
import { CliError, CliIo, EXIT, formatTable, json, writeFileAtomic } from './io';
import { DEFAULT_LOCAL_STATE_DIR } from './move-commands';

export interface CapacityFlags {
  readonly local?: boolean;
  readonly stateDir: string;
  readonly config: string;
  readonly json?: boolean;
  /** AWS: minutes of metrics the peak is taken over. */
  readonly window: string;
  /** Local: readings of the routers' tables, one a second; the peak is the highest. */
  readonly samples: string;
  /** Local: the shape the local cells are judged as. */
  readonly shape?: string;
  /** Local: the tested rate of the local cells (a laptop's cells are not the shape's). */
  readonly testedRps?: string;
  /** AWS: the mapping in force (for the plan and placement: which tenant is where). */
  readonly mapping?: string;
  readonly html?: string;
}

/** What the capacity commands work from: each cell's limits and load, the mapping, the settings. */
export interface CapacityInput {
  readonly fleet: FleetCapacity;
  readonly mapping?: MappingDocument;
  /** The mapping file a pin edits (the local fleet's, or --mapping). */
  readonly mappingFile?: string;
  readonly local: boolean;
  /** The fleet file the figures were judged against. */
  readonly config: Fleet;
}

const positive = (value: string | undefined, flag: string, integer = false): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0) || (integer && !Number.isInteger(n)))
    throw new CliError(`${flag} ${value}: give a ${integer ? 'whole ' : ''}number above 0`, EXIT.usage);
  return n;
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The local fleet: its router's keys table read `--samples` times a second apart (peak: the highest
 * reading), its cells judged as `--shape` of the fleet config (default: the shape of the config's
 * first non-canary cell) with the config's capacity settings.
 */
async function localInput(flags: CapacityFlags): Promise<CapacityInput> {
  const fleet = fleetFrom(flags.config);
  const stateDir = path.resolve(flags.stateDir);
  let info;
  try {
    info = readLocalFleet(stateDir);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
  const mapping = readMappingFile(info.mappingFile);
  const shapeName = flags.shape ?? (fleet.cells.find((c) => !c.canary) ?? fleet.cells[0]).shapeName;
  const template = fleet.cells.find((c) => c.shapeName === shapeName);
  if (!template)
    throw new CliError(
      `--shape ${shapeName}: no cell of the fleet has that shape (shapes: ${[...new Set(fleet.cells.map((c) => c.shapeName))].join(', ')})`,
      EXIT.usage,
    );
  const tested = positive(flags.testedRps, '--tested-rps') ?? template.shape.limits.requestsPerSecond;
  // Cell zero, the existing service, is no factory cell: it takes no tenant (as in AWS, where only the fleet's cells are judged).
  const limits: CellLimits[] = Object.entries(mapping.cells)
    .filter(([cell]) => cell !== info.cellZero)
    .map(([cell, c]) => ({
      cell,
      region: 'local',
      shape: shapeName,
      state: c.state,
      testedRps: tested,
      maxTenants: template.shape.limits.maxTenants,
      zones: template.availabilityZones.length,
    }));
  const api = new RuntimeApi(path.join(stateDir, 'router', 'admin.sock'));
  const samples: CellLoad[][] = [];
  const count = positive(flags.samples, '--samples', true)!;
  for (let i = 0; i < count; i++) {
    if (i > 0) await sleep(1000);
    try {
      samples.push(cellLoadsOf(await readTenantRates(api), mapping, 10));
    } catch (error) {
      throw new CliError(
        `cannot read the local router's tenant table (${path.join(stateDir, 'router', 'admin.sock')}): ${(error as Error).message}; is the local fleet running?`,
      );
    }
  }
  return { fleet: judgeFleet(limits, overWindow(samples), fleet.capacity), mapping, mappingFile: info.mappingFile, local: true, config: fleet };
}

/**
 * The AWS fleet: the routers' metrics in CloudWatch (router account, every region, the standard SDK
 * configuration), and each cell's own signals in its account and region, read through its metrics
 * reader role (`<app>-<cell>-metrics-reader`, assumed from the same credentials), judged against the
 * config's shapes.
 */
async function awsInput(flags: CapacityFlags, progress: (line: string) => void): Promise<CapacityInput> {
  const fleet: Fleet = fleetFrom(flags.config);
  const window = positive(flags.window, '--window', true)!;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { CloudWatchClient } = require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { readCellSignals, readRouterLoads } = require('./capacity-cloudwatch') as typeof import('./capacity-cloudwatch');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { assumedRole, ssmParameter } = require('../adapters/aws/assumed-role') as typeof import('../adapters/aws/assumed-role');
  const clients = Object.keys(fleet.regions).map((region) => new CloudWatchClient({ region }));
  const cellClients = fleet.cells.map((cell) => {
    const role = `arn:${fleet.partition}:iam::${cell.account}:role/${cellMetricsReaderRoleName(fleet.app, cell.id)}`;
    const credentials = assumedRole(role, `cellctl-capacity-${cell.id}`.slice(0, 64), undefined, cell.region);
    const name = cellSignalsParameter(fleet.app, cell.id);
    return {
      cell: cell.id,
      client: new CloudWatchClient({ region: cell.region, credentials }),
      record: async () =>
        parseSignalsRecord(
          await ssmParameter(
            name,
            cell.region,
            credentials,
            `the cell stack ${fleet.app}-cell-${cell.id} has not published its signals; deploy it (the pipeline's cell waves)`,
          ),
          `SSM ${name} in ${cell.region}`,
        ),
    };
  });
  try {
    const now = new Date();
    const [loads, signals] = await Promise.all([
      readRouterLoads({
        clients,
        cells: fleet.cells.map((c) => c.id),
        groups: fleet.router.groups.map((g) => g.name),
        windowMinutes: window,
        now,
        sleep,
        progress,
      }),
      readCellSignals({ sources: cellClients, windowMinutes: window, now, sleep, progress }),
    ]);
    for (const s of signals) if ('error' in s) progress(`${s.cell}: its own signals were not read: ${s.error}`);
    const byCell = new Map(signals.map((s) => [s.cell, s]));
    const withSignals = loads.map((l) => {
      const s = byCell.get(l.cell);
      return !s ? l : 'error' in s ? { ...l, signalsError: s.error } : { ...l, signals: s.signals };
    });
    const mapping = flags.mapping ? readMappingFile(flags.mapping) : undefined;
    return { fleet: judgeFleet(cellLimitsOf(fleet), withSignals, fleet.capacity), mapping, mappingFile: flags.mapping, local: false, config: fleet };
  } finally {
    [...clients, ...cellClients.map((c) => c.client)].forEach((c) => c.destroy());
  }
}

function commonOptions(command: Command): Command {
  return command
    .option(
      '--local',
      "the running local fleet (`cellctl fleet local`); without it, the AWS fleet through CloudWatch (router account credentials; each cell's own signals through its metrics reader role)",
    )
    .option('--state-dir <dir>', "with --local: the local fleet's state directory", DEFAULT_LOCAL_STATE_DIR)
    .option('--config <file>', 'fleet config (shapes, tested limits, capacity settings)', 'cells.config.ts')
    .option('--window <minutes>', 'AWS: minutes of metrics the peak is taken over', '60')
    .option('--samples <n>', "with --local: readings of the router's tenant table, a second apart; the peak is the highest", '3')
    .option('--shape <name>', "with --local: the shape the local cells are judged as (default: the shape of the config's first non-canary cell)")
    .option('--tested-rps <n>', "with --local: the local cells' tested requests per second (default: the shape's)")
    .option('--mapping <file>', 'AWS: the mapping in force (`cellctl mapping` documents), needed to plan moves and pins')
    .option('--json', 'print the result as JSON');
}

export async function inputOf(io: CliIo, flags: CapacityFlags): Promise<CapacityInput> {
  return flags.local ? localInput(flags) : awsInput(flags, (line) => io.err(`${line}\n`));
}

const rps = (n: number) => (n >= 100 ? String(Math.round(n)) : n.toFixed(1));
const pct = (n: number) => `${Math.round(n * 100)}%`;

const signalText = (name: CellSignalName, reading: SignalReading | undefined) => signalPeakText(name, reading) ?? 'missing';

/** Why a cell is hot or full, beyond its rate: `database CPU 81%`. */
function causesText(c: CellCapacity): string {
  const shown = c.statusBy
    .filter((s): s is Exclude<StatusCause, 'rate'> => s !== 'rate')
    .map((s) => (s === 'tenants' ? `${c.activeTenants} tenants` : `${SIGNAL_LABELS[s]} ${signalText(s, c.signals?.[s])}`));
  return shown.length > 0 ? ` (${shown.join(', ')})` : '';
}

/** The per-cell table and the fleet's summary, as `cellctl capacity` prints them. */
/** `, about $690 a month each (standard)`: what a cell of each shape costs (`cellctl cost`), when known. */
function eachCosts(costs: ReadonlyMap<string, number> | undefined, shape?: string): string {
  if (!costs || costs.size === 0) return '';
  const one = (n: number) => `$${Math.round(n).toLocaleString('en-US')}`;
  if (shape !== undefined)
    return costs.has(shape) ? ` (about ${one(costs.get(shape)!)} a month each fixed, router endpoints included; cellctl cost)` : '';
  return ` (a cell costs about ${[...costs].map(([s, n]) => `${one(n)} a month as ${s}`).join(', ')} fixed, router endpoints included; cellctl cost)`;
}

export function capacityText(f: FleetCapacity, costs?: ReadonlyMap<string, number>): string {
  // The cells' own signals (AWS), peaks over the window, when they were asked for.
  const signalled = f.cells.some((c) => c.signals || c.signalsError);
  const table = formatTable(
    [
      'cell',
      'region',
      'shape',
      'now',
      'peak',
      'tested',
      'of tested',
      'zone lost',
      'tenants',
      'largest tenant',
      ...(signalled ? ['compute used', 'db CPU', 'db conns', 'queue age'] : []),
      'status',
    ],
    f.cells.map((c) => [
      c.cell,
      c.region,
      c.shape,
      rps(c.currentRps),
      rps(c.peakRps),
      rps(c.testedRps),
      pct(c.utilisation),
      pct(c.zoneLossUtilisation),
      `${c.activeTenants}/${c.maxTenants}`,
      c.largestTenant ? `${c.largestTenant.tenant} ${rps(c.largestTenant.peakRps)} (${pct(c.largestTenant.share)})` : '-',
      ...(signalled ? CELL_SIGNALS.map((name) => (c.signalsError ? 'unread' : signalText(name, c.signals?.[name]))) : []),
      c.status + causesText(c) + (c.missingPeriods > 0 ? ` (${c.missingPeriods} periods without data)` : ''),
    ]),
  );
  const lines = [
    `\npeak ${rps(f.peakRps)} req/s; at the target of ${pct(f.settings.targetUtilisation)} of tested the fleet needs ${f.cellsNeeded} cells (${f.settings.spareCells} spare); ${f.activeCells} active` +
      (f.cellsToAdd > 0 ? `: add ${f.cellsToAdd}${eachCosts(costs)}` : ''),
    ...(f.largeTenants.length > 0
      ? [
          `large tenants (above ${pct(f.settings.largeTenantShare)} of a cell's target): ${f.largeTenants.map((t) => `${t.tenant} on ${t.cell} ${rps(t.peakRps)} req/s (${pct(t.shareOfTarget)} of a target)`).join(', ')}; candidates for a dedicated cell or a pin`,
        ]
      : []),
    ...f.cells
      .filter((c) => c.status !== 'ok')
      .map((c) =>
        c.statusBy.includes('rate') || c.statusBy.includes('tenants') || !hotByCpu(c)
          ? `${c.cell} is ${c.status}: \`cellctl capacity plan --out FILE\` moves tenants away`
          : `${c.cell} is hot by ${c.statusBy.map((s) => SIGNAL_LABELS[s as CellSignalName]).join(' and ')} (above ${pct(f.settings.targetUtilisation)}) while its rate is under its target: ` +
            'its requests cost more than its shape was tested with; `capacity plan` moves by rate and plans nothing for it, and it takes no tenant from a plan or `place`',
      ),
    ...f.cells.filter((c) => c.signalsError).map((c) => `${c.cell}: its own signals were not read: ${c.signalsError}`),
  ];
  return `${table}${lines.join('\n')}\n`;
}

export function planText(plan: CapacityPlan, costs?: ReadonlyMap<string, number>): string {
  const out: string[] = [];
  if (plan.moves.length === 0)
    out.push('no move needed' + (plan.unresolved.length > 0 ? ' that moves can make' : ': every cell is under its target'));
  else
    out.push(
      formatTable(
        ['tenant', 'as', 'from', 'to', 'peak req/s'],
        plan.moves.map((m) => [m.tenant, m.bucket === undefined ? 'tenant' : `bucket ${m.bucket}`, m.from, m.to, rps(m.peakRps)]),
      ).trimEnd(),
    );
  for (const c of plan.cells.filter((x) => x.peakRpsAfter !== x.peakRpsBefore))
    out.push(`${c.cell}: ${rps(c.peakRpsBefore)} -> ${rps(c.peakRpsAfter)} req/s (target ${rps(c.targetRps)})`);
  for (const t of plan.tooBig)
    out.push(
      `${t.tenant} (${rps(t.peakRps)} req/s on ${t.cell}) is above the target of every cell it could move to (${rps(t.targetRps)}): a dedicated cell of a larger shape, or a second key dimension`,
    );
  for (const a of plan.cellsToAdd)
    out.push(
      `moves cannot bring every cell under its target: add ${a.count} cell(s) of shape ${a.shape}${a.tier ? `, tier ${a.tier},` : ''} in ${a.region}${eachCosts(costs, a.shape)}, then plan again`,
    );
  return `${out.join('\n')}\n`;
}

function requireMapping(input: CapacityInput, what: string): MappingDocument {
  if (!input.mapping) throw new CliError(`${what} needs the mapping in force: pass --mapping FILE (or --local)`, EXIT.usage);
  return input.mapping;
}

/** `cellctl capacity`, `cellctl capacity plan`. */
export function capacityCommand(io: CliIo): Command {
  const capacity = commonOptions(
    new Command('capacity')
      .description("each cell's rate and tenants against its shape's tested limits and the fleet's target; the cells the peak needs")
      .option('--html <file>', 'also write one self-contained page: utilisation bars, top tenants, the plan'),
  ).action(async (flags: CapacityFlags) => {
    const input = await inputOf(io, flags);
    const plan = input.mapping ? planCapacity(input.fleet, input.mapping) : undefined;
    if (flags.html) writeFileAtomic(flags.html, capacityHtml(input.fleet, plan, `Capacity${input.local ? ' (local fleet)' : ''}`));
    io.out(flags.json ? json(input.fleet) : capacityText(input.fleet, input.local ? undefined : shapeCostsOf(input.config)));
  });

  // The options of `capacity` apply (commander gives them to the parent wherever they stand).
  capacity
    .command('plan')
    .description(
      'moves (tenants or buckets) that bring every cell under its target, moving as few tenants as possible; the file is what `cellctl move plan FILE` runs (options: those of `cellctl capacity`)',
    )
    .requiredOption('--out <file>', 'where to write the move plan')
    .action(async ({ out }: { out: string }) => {
      const flags = { ...(capacity.opts() as CapacityFlags), out };
      const input = await inputOf(io, flags);
      const plan = planCapacity(input.fleet, requireMapping(input, 'capacity plan'));
      writeFileAtomic(flags.out, `${JSON.stringify(movePlanOf(plan), null, 2)}\n`);
      if (flags.json) io.out(json(plan));
      else {
        io.out(planText(plan, input.local ? undefined : shapeCostsOf(input.config)));
        if (plan.moves.length > 0) io.out(`wrote ${flags.out}: run it with \`cellctl move plan ${flags.out}${input.local ? ' --local' : ''}\`\n`);
      }
    });
  return capacity;
}

/** `cellctl place TENANT --expected-rps R`. */
export function placeCommand(io: CliIo): Command {
  return commonOptions(
    new Command('place')
      .description('where a new (large) tenant should go: best fit under the target among active cells, and the pin that puts it there')
      .argument('<tenant>', 'tenant id (partition key)')
      .requiredOption('--expected-rps <n>', "the tenant's expected peak, requests per second")
      .option('--region <region>', 'only cells of this region')
      .option('--in-shape <name>', 'only cells of this shape')
      .option('--tier <name>', "only cells of this tier (default: the fleet's capacity.defaultTier); a tenant with a dedicated cell goes there"),
  ).action(async (tenant: string, flags: CapacityFlags & { expectedRps: string; region?: string; inShape?: string; tier?: string }) => {
    const problem = keyProblem(tenant);
    if (problem) throw new CliError(`tenant ${JSON.stringify(tenant)}: ${problem}`, EXIT.usage);
    const expected = Number(flags.expectedRps);
    if (!(expected >= 0) || flags.expectedRps.trim() === '')
      throw new CliError(`--expected-rps ${flags.expectedRps}: give requests per second, a number of 0 or more`, EXIT.usage);
    const input = await inputOf(io, flags);
    // With home tables, the tenant's home (its key's prefix) bounds where it may go: its data stays in its region.
    const homes = input.mapping?.homes;
    const homeRegions = homes && homes.tables.length > 1 ? homes.tables[homeTableOf(homes)(tenant)].regions : undefined;
    if (homeRegions && flags.region !== undefined && !homeRegions.includes(flags.region))
      throw new CliError(
        `--region ${flags.region}: tenant ${tenant}'s home is ${homeRegions.join(' or ')} (its key's prefix, the mapping's home tables), and its data stays there; leave out --region, or give the tenant a key of that region's prefix`,
        EXIT.usage,
      );
    let answer;
    try {
      answer = place(input.fleet, { tenant, expectedRps: expected, region: flags.region, homeRegions, shape: flags.inShape, tier: flags.tier });
    } catch (error) {
      throw new CliError((error as Error).message, EXIT.usage);
    }
    const mapping = input.mapping;
    const current = mapping ? safeCell(mapping, tenant) : undefined;
    const planFile = `place-${tenant}.json`;
    const command =
      answer.kind === 'fits' && current !== answer.cell
        ? `cellctl mapping pin ${tenant} ${answer.cell} --mapping ${input.mappingFile ?? 'MAPPING.json'} --plan ${planFile} && cellctl move plan ${planFile}${input.local ? ' --local' : ''}`
        : undefined;
    if (flags.json) {
      io.out(json({ tenant, expectedRps: expected, ...answer, ...(current ? { currentCell: current } : {}), ...(command ? { command } : {}) }));
      return;
    }
    if (answer.kind === 'too-big') {
      io.out(
        `${tenant} at ${rps(expected)} req/s is above the target of every cell that may take it (${rps(answer.largestTargetRps)} req/s): give it a dedicated cell of a larger shape, or split it along a second key dimension\n`,
      );
    } else if (answer.kind === 'no-room') {
      io.out(
        `no active cell has ${rps(expected)} req/s of room under its target; a new cell of shape ${answer.shape}${answer.region ? ` in ${answer.region}` : ''} would (target ${rps(answer.targetRps)} req/s): add one, or move tenants away first (\`cellctl capacity plan\`)\n`,
      );
    } else if (answer.dedicated && current === answer.cell) {
      io.out(
        `${answer.cell}: dedicated to ${tenant}, which is already routed there (${rps(answer.peakRpsAfter)} of ${rps(answer.targetRps)} req/s after)\n`,
      );
    } else if (answer.dedicated) {
      io.out(`${answer.cell}: dedicated to ${tenant} (${rps(answer.peakRpsAfter)} of ${rps(answer.targetRps)} req/s after)\n`);
      io.out(`pin it there (the move copies its rows, none for a new tenant, then pins it):\n  ${command}\n`);
    } else if (current === answer.cell) {
      io.out(
        `${answer.cell}: ${tenant} is already routed there; it stays under its target at ${rps(answer.peakRpsAfter)} req/s (${pct(answer.utilisationAfter)} of tested)\n`,
      );
    } else {
      io.out(
        `${answer.cell}: best fit under its target, ${rps(answer.peakRpsAfter)} of ${rps(answer.targetRps)} req/s after (${pct(answer.utilisationAfter)} of tested)\n`,
      );
      io.out(`pin it there (the move copies its rows, none for a new tenant, then pins it):\n  ${command}\n`);
    }
  });
}

function safeCell(mapping: MappingDocument, tenant: string): string | undefined {
  try {
    return lookup(mapping, tenant).cell;
  } catch {
    return undefined;
  }
}
