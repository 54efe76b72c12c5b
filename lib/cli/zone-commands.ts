import { Command } from 'commander';
import { FULL_WEIGHT, weightOf, withZoneWeight, ZonesDocument } from '../domain/zones';
import type { FleetFile, FleetFileZones } from '../operations/local-fleet';
import type { UndrainResult, ZoneChangeResult, ZoneCounters } from '../operations/zones';
import { CliError, CliIo, formatTable, integerFlag, json } from './io';
import { DEFAULT_LOCAL_STATE_DIR } from './move-commands';

type ZonesOps = typeof import('../operations/zones');
// Loaded on first use: cellctl starts without the local fleet's modules.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
const zonesOps = (): ZonesOps => require('../operations/zones') as ZonesOps;

interface LocalFlags {
  readonly local?: boolean;
  readonly stateDir: string;
  readonly json?: boolean;
  /** AWS: the fleet file and the region. */
  readonly config: string;
  readonly region?: string;
  readonly forcePathStyle?: boolean;
}

/** The running local fleet and its zones, or a usage error saying how to get them. */
function localFleet(flags: LocalFlags): { fleet: FleetFile; zones: FleetFileZones } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
  const fleet = readFleetFile(flags.stateDir);
  if (!fleet) throw new CliError(`no local fleet in ${flags.stateDir}: start one with \`cellctl fleet local --zones 3\` (or give --state-dir)`);
  try {
    return { fleet, zones: zonesOps().fleetZones(fleet, flags.stateDir) };
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

function zoneArgument(zone: string, zones: FleetFileZones): string {
  if (!zones.ids.includes(zone))
    throw new CliError(`zone ${zone}: not one of the fleet's zones (${zones.ids.join(', ')}); give an AZ ID from \`cellctl zone status\``, 2);
  return zone;
}

const pct = (share: number) => `${(share * 100).toFixed(share > 0 && share < 0.01 ? 2 : 1)}%`;

function statusRows(doc: ZonesDocument, zones: FleetFileZones, counters: Map<string, ZoneCounters>): (string | number)[][] {
  const total = zones.ids.reduce((n, z) => n + weightOf(doc, z), 0);
  return zones.ids.map((z) => {
    const c = counters.get(z);
    const state = doc.zones[z];
    return [
      z,
      `${weightOf(doc, z)}%`,
      pct(total === 0 ? 0 : weightOf(doc, z) / total),
      c ? (c.weights.length === 1 ? String(c.weights[0]) : c.weights.join('/') || '-') : '-',
      c ? `${c.servers - c.down}/${c.servers}` : '-',
      c?.inFlight ?? '-',
      state?.since ?? '',
      state?.reason ?? '',
    ];
  });
}

/** One line per change: when it applied against the poll, and what the measurement saw. */
export function changeText(r: ZoneChangeResult): string {
  const share = r.measured.requests > 0 ? r.measured.inZone / r.measured.requests : 0;
  const applied = `in force at every router ${r.appliedMs} ms after the write (they poll every ${r.pollMs} ms)`;
  const seen =
    r.measured.requests === 0
      ? `no requests in the next ${(r.measured.ms / 1000).toFixed(1)} s to measure`
      : `then ${r.measured.inZone} of ${r.measured.requests} new requests in ${(r.measured.ms / 1000).toFixed(1)} s reached it (${pct(share)}; its weight gives ${pct(r.expectedShare)})`;
  const flight =
    r.weight === 0 && r.inFlightAtChange > 0
      ? `; ${r.inFlightAtChange} in flight at the change${r.inFlightDoneMs !== undefined ? `, finished within ${r.inFlightDoneMs} ms` : ', still finishing'}`
      : '';
  return `${r.zone} ${r.weightBefore}% → ${r.weight}% (zones version ${r.version}): ${applied}; ${seen}${flight}\n`;
}

const localOptions = (command: Command): Command =>
  command
    .option('--local', 'the running local fleet (`cellctl fleet local --zones 3`); without it, the region in AWS (the publisher role)')
    .option('--state-dir <dir>', "with --local: the local fleet's state directory", DEFAULT_LOCAL_STATE_DIR)
    .option('--region <region>', 'AWS: the region whose zone it is (its zones document, router NLBs and router tasks)')
    .option('--config <file>', "AWS: the fleet file (the region's zones, router groups and lanes)", 'cells.config.ts')
    .option('--force-path-style', 'AWS: path-style S3 addressing, for S3-compatible servers')
    .option('--json', 'print the result as JSON');

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
const awsZones = () => require('./zone-aws') as typeof import('./zone-aws');

export function zoneCommand(io: CliIo): Command {
  const zone = new Command('zone').description(
    'drain an Availability Zone: every router\'s servers in it stop taking new requests within one poll; undrain in steps with a bake (docs/operating.md, "Draining a zone")',
  );

  localOptions(zone.command('status').description("each zone's weight in the zones document, and what the routers' servers carry")).action(
    async (flags: LocalFlags) => {
      if (!flags.local) {
        const aws = awsZones();
        const t = aws.awsZoneTarget(flags.config, flags.region, undefined, flags.forcePathStyle);
        const doc = await aws.readAwsZonesDocument(t);
        if (flags.json) return void io.out(json({ region: t.region, document: doc }));
        io.out(`zones document of ${t.region}, version ${doc.version} (${doc.updatedAt})\n\n`);
        const total = t.zones.reduce((n, z) => n + weightOf(doc, z), 0);
        io.out(
          formatTable(
            ['zone', 'weight', 'share', 'since', 'reason'],
            t.zones.map((z) => [
              z,
              `${weightOf(doc, z)}%`,
              pct(total === 0 ? 0 : weightOf(doc, z) / total),
              doc.zones[z]?.since ?? '',
              doc.zones[z]?.reason ?? '',
            ]),
          ),
        );
        return;
      }
      const { fleet, zones } = localFleet(flags);
      const ops = zonesOps();
      const doc = ops.readLocalZones(zones);
      const counters = await ops.zoneCounters(ops.fleetRouterApis(fleet), zones.ids);
      if (flags.json) return void io.out(json({ region: zones.region, document: doc, routers: Object.fromEntries(counters) }));
      io.out(`zones document ${zones.file}, version ${doc.version} (${doc.updatedAt})\n\n`);
      io.out(
        formatTable(['zone', 'weight', 'share', 'servers carry', 'servers up', 'in flight', 'since', 'reason'], statusRows(doc, zones, counters)),
      );
    },
  );

  localOptions(
    zone
      .command('drain <az-id>')
      .description('move new requests off a zone: its weight to 100 - --percent; in flight requests finish')
      .option('--percent <p>', 'how much of its share to move away (1-100)', '100')
      .option('--reason <text>', 'why (kept in the zones document, shown by status)')
      .option('--measure <seconds>', 'how long to count new requests after it applied', '3')
      .option('--plan', 'say what moves, what does not, and whether the other zones hold the load; change nothing')
      .option('--force', "drain although capacity's figures say a cell would pass its tested rate")
      .option('--no-capacity-check', "do not read capacity's figures first (`cellctl capacity`)")
      .option(
        '--expires <duration>',
        "AWS: how long the router NLBs' zonal shifts last (minutes or hours, at most 72h); drain again to extend",
        '12h',
      )
      .option('--no-shift', "AWS: change the routers' weights only, no zonal shift of the router NLBs")
      .option('--wait <seconds>', 'AWS: how long to wait for every router task to carry the change (0: do not wait)', '60')
      .option(
        '--failover-writers',
        "AWS, whole drain: then fail each of the region's cells' database writers in the zone over to another zone, one cell at a time, canary first (run again to finish one that stopped)",
      )
      .option('--writer-timeout <seconds>', "AWS: how long one cell's writer failover may take before the run stops", '900'),
  ).action(
    async (
      az: string,
      flags: LocalFlags & {
        failoverWriters?: boolean;
        writerTimeout: string;
        percent: string;
        reason?: string;
        measure: string;
        plan?: boolean;
        expires: string;
        shift: boolean;
        wait: string;
        force?: boolean;
        capacityCheck: boolean;
      },
    ) => {
      if (!flags.local) {
        const aws = awsZones();
        const t = aws.awsZoneTarget(flags.config, flags.region, az, flags.forcePathStyle);
        const percent = integerFlag(flags.percent, '--percent', 1, 100);
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
        const problem = (require('../adapters/aws/zonal-shift') as typeof import('../adapters/aws/zonal-shift')).expiresInProblem(flags.expires);
        if (problem) throw new CliError(`--expires ${problem}`, 2);
        if (flags.failoverWriters && percent !== 100)
          throw new CliError(`--failover-writers goes with a whole drain: --percent ${percent} leaves the zone serving; leave --percent out`, 2);
        const writerTimeoutMs = integerFlag(flags.writerTimeout, '--writer-timeout', 60, 3600) * 1000;
        const doc = await aws.readAwsZonesDocument(t);
        refusedChange(doc, t.zones, az, FULL_WEIGHT - percent);
        const factor = factorOf(doc, t.zones, az, FULL_WEIGHT - percent);
        if (flags.plan) {
          const cells = t.fleet.cells.filter((c) => c.region === t.region).length;
          const capacity = await planCapacity(io, flags, factor, t.region);
          // Cells whose shape has one NAT gateway, in this zone (their first): egress of every zone goes through it.
          const singleNat = t.fleet.cells
            .filter((c) => c.region === t.region && c.shape.natGateways === 'one' && c.availabilityZones[0] === az)
            .map((c) => c.id);
          return void planText(io, {
            cells,
            singleNat,
            zoneIds: t.zones,
            doc,
            zone: az,
            weight: FULL_WEIGHT - percent,
            json: flags.json,
            aws: true,
            capacity,
            failoverWriters: flags.failoverWriters,
          });
        }
        await checkZoneCapacity(io, flags, factor, t.region);
        const report = await aws.changeAwsZoneWeight(t, {
          zone: az,
          weight: FULL_WEIGHT - percent,
          reason: flags.reason ?? `drained ${percent}%`,
          expiresIn: flags.expires,
          waitMs: integerFlag(flags.wait, '--wait', 0, 3600) * 1000,
          shift: flags.shift,
        });
        if (!flags.failoverWriters) return void io.out(flags.json ? json(report) : aws.awsChangeText(report));
        if (!flags.json) io.out(aws.awsChangeText(report));
        const writers = await aws.failOverAwsWriters(t, {
          zone: az,
          timeoutMs: writerTimeoutMs,
          progress: (o) => void (flags.json ? undefined : io.out(`${aws.writerOutcomeText(o)}\n`)),
        });
        if (flags.json) io.out(json({ ...report, writers }));
        const failed = writers.find((w) => w.kind === 'failed');
        if (failed)
          throw new CliError(
            `writer failover stopped at ${failed.cell}: ${failed.reason}; the zone stays drained. Run the drain again with --failover-writers to continue (cells whose writer left the zone are left alone)`,
          );
        return;
      }
      if (flags.failoverWriters)
        throw new CliError("--failover-writers: the local fleet's databases are not zonal (one PostgreSQL per cell); it acts on AWS (--region R)", 2);
      const { fleet, zones } = localFleet(flags);
      zoneArgument(az, zones);
      const percent = integerFlag(flags.percent, '--percent', 1, 100);
      const ops = zonesOps();
      const doc = ops.readLocalZones(zones);
      const weight = FULL_WEIGHT - percent;
      refusedChange(doc, zones.ids, az, weight);
      const factor = factorOf(doc, zones.ids, az, weight);
      if (flags.plan) {
        const capacity = await planCapacity(io, flags, factor);
        return void planText(io, { cells: fleet.cells.length, zoneIds: zones.ids, doc, zone: az, weight, json: flags.json, capacity });
      }
      await checkZoneCapacity(io, flags, factor);
      let result: ZoneChangeResult;
      try {
        result = await ops.changeLocalZone({
          zones,
          apis: ops.fleetRouterApis(fleet),
          zone: az,
          weight,
          reason: flags.reason ?? `drained ${percent}%`,
          measureMs: integerFlag(flags.measure, '--measure', 0, 600) * 1000,
        });
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      if (flags.json) return void io.out(json(result));
      io.out(changeText(result));
    },
  );

  localOptions(
    zone
      .command('undrain <az-id>')
      .description("bring a zone back in steps, baking each on the zone's health; a failed bake puts it back")
      .option('--steps <list>', 'percent of its share at each step, rising, ending at 100', '1,5,25,50,100')
      .option('--bake <seconds>', "how long each step runs before the next, watching the zone's servers", '10')
      .option('--measure <seconds>', 'how long to count new requests after each step applied', '2')
      .option('--wait <seconds>', 'AWS: how long to wait for every router task to carry each step', '60'),
  ).action(async (az: string, flags: LocalFlags & { steps: string; bake: string; measure: string; wait: string }) => {
    const steps = flags.steps.split(',').map((s) => Number(s.trim()));
    if (!flags.local) {
      const aws = awsZones();
      const t = aws.awsZoneTarget(flags.config, flags.region, az, flags.forcePathStyle);
      const reports = await aws.undrainAwsZone(io, t, {
        zone: az,
        steps,
        bakeMs: integerFlag(flags.bake, '--bake', 0, 3600) * 1000,
        waitMs: integerFlag(flags.wait, '--wait', 0, 3600) * 1000,
        expiresIn: '1h',
        json: flags.json,
      });
      return void io.out(flags.json ? json(reports) : `${t.region} ${az} is back at its full share\n`);
    }
    const { fleet, zones } = localFleet(flags);
    zoneArgument(az, zones);
    const ops = zonesOps();
    let result: UndrainResult;
    try {
      result = await ops.undrainLocalZone({
        zones,
        apis: ops.fleetRouterApis(fleet),
        zone: az,
        steps,
        bakeMs: integerFlag(flags.bake, '--bake', 0, 3600) * 1000,
        measureMs: integerFlag(flags.measure, '--measure', 0, 600) * 1000,
        onStep: (step) => {
          if (!flags.json) io.out(changeText(step));
        },
      });
    } catch (error) {
      throw new CliError((error as Error).message);
    }
    if (flags.json) io.out(json(result));
    if (result.failed)
      throw new CliError(
        `undrain of ${az} stopped at ${result.failed.atWeight}%: ${result.failed.reason}; the zone is back at ${result.failed.backTo}%`,
      );
    if (!flags.json) io.out(`${az} is back at its full share\n`);
  });
  return zone;
}

/**
 * `zone drain --plan`: what moves (new requests at every router's servers of the zone), what does
 * not (the zone's processes keep running; requests in flight finish), and whether the zones left
 * take the load: each takes N/(N-1) of what it took.
 */
function planText(
  io: CliIo,
  o: {
    cells: number;
    /** Cells of the region whose one NAT gateway (shapes.<name>.natGateways: 'one') is in the zone. */
    singleNat?: readonly string[];
    zoneIds: readonly string[];
    doc: ZonesDocument;
    zone: string;
    weight: number;
    json?: boolean;
    aws?: boolean;
    capacity: PlanCapacity;
    failoverWriters?: boolean;
  },
): void {
  const serving = o.zoneIds.filter((z) => z !== o.zone && weightOf(o.doc, z) > 0);
  const before = o.zoneIds.reduce((n, z) => n + weightOf(o.doc, z), 0);
  const after = before - weightOf(o.doc, o.zone) + o.weight;
  // Each zone left takes its weight's part of the requests: before w/before, after w/after.
  const factor = after === 0 ? Infinity : before / after;
  const plan = {
    zone: o.zone,
    weight: o.weight,
    moves: o.aws
      ? `new requests to the zone's servers at every router task of the region (its ${o.cells} cells and every other cell it reaches), and for a whole drain new connections to the router NLBs' nodes in the zone (ARC zonal shift)` +
        (o.failoverWriters
          ? "; then each of its cells' database writers in the zone, failed over to another zone one cell at a time, canary first (Aurora promotes a reader, Multi-AZ RDS its standby; each cell's writes pause while it fails over)"
          : '')
      : `new requests to the zone's servers at every router: ${o.cells} cells`,
    doesNotMove: o.aws
      ? [
          "the cells' tasks in the zone keep running, with their SQS consumers: they finish what they hold and take queue messages",
          ...(o.failoverWriters ? [] : ["each cell's database writer in the zone stays there (--failover-writers moves them, one cell at a time)"]),
          "connections already open through the router NLBs' nodes in the zone, and requests in flight: they finish (keep-alive connections end at the router's client timeout)",
          ...(o.singleNat?.length
            ? [
                `the one NAT gateway of ${o.singleNat.join(', ')} (shape natGateways 'one') is in this zone: while the zone is out, their tasks in every zone lose outbound access`,
              ]
            : []),
        ]
      : [
          "the zone's workload processes keep running, with their queue consumers (as a cell's tasks in the zone do in AWS)",
          "each cell's database: the local fleet's is not zonal (in AWS, a writer in the zone stays there unless failed over)",
          'requests in flight at the change: they finish',
        ],
    zonesLeft: serving,
    eachZoneLeftTakes: factor,
    capacity: o.capacity,
  };
  if (o.json) return void io.out(json(plan));
  io.out(`drain ${o.zone} to ${o.weight}% of its share (zones version ${o.doc.version} → ${o.doc.version + 1})\n`);
  io.out(`moves        ${plan.moves}\n`);
  io.out(`does not     ${plan.doesNotMove.join('\n             ')}\n`);
  io.out(
    `zones left   ${serving.join(', ') || 'none'}: each takes ${Number.isFinite(factor) ? `${factor.toFixed(2)}×` : 'everything'} the requests it takes now (N/(N-1) = ${(o.zoneIds.length / (o.zoneIds.length - 1)).toFixed(2)}× for a whole zone of ${o.zoneIds.length})\n`,
  );
  if ('error' in o.capacity) io.out(`capacity     not read: ${o.capacity.error}\n`);
  else {
    const over = o.capacity.rows.filter((r) => r.after > 1);
    io.out(
      `capacity     ${o.capacity.rows.length} cells read; ${over.length ? `${over.length} would pass their tested rate (drain refuses without --force)` : 'every cell stays within its tested rate'}\n`,
    );
    for (const r of [...o.capacity.rows].sort((a, b) => b.after - a.after).slice(0, 10)) io.out(`             ${rowText(r, factor)}\n`);
  }
}

type PlanCapacity = { readonly rows: readonly ZoneCapacityRow[] } | { readonly error: string };

/** `--plan`'s capacity figures, or why they were not read. */
async function planCapacity(
  io: CliIo,
  flags: { local?: boolean; stateDir: string; config: string; capacityCheck: boolean },
  factor: number,
  region?: string,
): Promise<PlanCapacity> {
  if (!flags.capacityCheck) return { error: '--no-capacity-check' };
  try {
    return { rows: (await zoneCapacity(io, flags, factor, region)).rows };
  } catch (error) {
    return { error: (error as Error).message.replace(/\s*\n\s*/g, ' ') };
  }
}

/** How much more each zone left takes: the weights' sum now over the sum after the change. */
function factorOf(doc: ZonesDocument, zoneIds: readonly string[], zone: string, weight: number): number {
  const before = zoneIds.reduce((n, z) => n + weightOf(doc, z), 0);
  const after = before - weightOf(doc, zone) + weight;
  return after === 0 ? Infinity : before / after;
}

/** One cell's load after the change: its peak over the rate it was tested at, times what the zones left take. */
export interface ZoneCapacityRow {
  readonly cell: string;
  readonly peakRps: number;
  readonly testedRps: number;
  readonly targetRps: number;
  /** Peak × factor over tested. */
  readonly after: number;
}

/**
 * Whether the zones left hold the load, from capacity's figures (`cellctl capacity`): each cell's peak
 * times `factor` (N/(N-1) for a whole zone of N) against its tested rate (over it: refused unless
 * --force) and its target (over it: a warning). Cells of `region` only, when given.
 */
export async function zoneCapacity(
  io: CliIo,
  flags: { local?: boolean; stateDir: string; config: string },
  factor: number,
  region?: string,
): Promise<{ rows: ZoneCapacityRow[]; over: ZoneCapacityRow[]; warn: ZoneCapacityRow[] }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { inputOf } = require('./capacity-commands') as typeof import('./capacity-commands');
  const input = await inputOf(io, { local: flags.local, stateDir: flags.stateDir, config: flags.config, window: '60', samples: '1' });
  const rows = input.fleet.cells
    .filter((c) => region === undefined || c.region === region)
    .map((c) => ({
      cell: c.cell,
      peakRps: c.peakRps,
      testedRps: c.testedRps,
      targetRps: c.targetRps,
      after: c.testedRps > 0 ? (c.peakRps * factor) / c.testedRps : 0,
    }));
  return {
    rows,
    over: rows.filter((r) => r.peakRps * factor > r.testedRps),
    warn: rows.filter((r) => r.peakRps * factor > r.targetRps && r.peakRps * factor <= r.testedRps),
  };
}

const rowText = (r: ZoneCapacityRow, factor: number) =>
  `${r.cell} ${r.peakRps.toFixed(1)} rps × ${factor.toFixed(2)} = ${(r.peakRps * factor).toFixed(1)} of ${r.testedRps} tested (${Math.round(r.after * 100)}%)`;

/**
 * Before a drain: reads the capacity figures and refuses (exit 1) when a cell would pass its tested
 * rate, unless `force`; warns past the target. Figures that cannot be read are a warning, never a
 * refusal: a drain is an incident's tool.
 */
export async function checkZoneCapacity(
  io: CliIo,
  flags: { local?: boolean; stateDir: string; config: string; force?: boolean; capacityCheck: boolean },
  factor: number,
  region?: string,
): Promise<void> {
  if (!flags.capacityCheck) return;
  let result;
  try {
    result = await zoneCapacity(io, flags, factor, region);
  } catch (error) {
    const message = (error as Error).message.replace(/\s*\n\s*/g, ' ');
    io.err(`capacity not read (${message}); the zones left take ${factor.toFixed(2)}× their load, unchecked (--no-capacity-check skips this)\n`);
    return;
  }
  for (const r of result.warn) io.err(`warning: ${rowText(r, factor)}: past its target utilisation\n`);
  if (result.over.length === 0) return;
  const lines = result.over.map((r) => `  ${rowText(r, factor)}`).join('\n');
  if (!flags.force)
    throw new CliError(
      `the zones left would not hold the load: ${result.over.length} cell(s) past their tested rate\n${lines}\nmove tenants off them or add capacity first, or drain anyway with --force`,
    );
  io.err(`--force: draining although ${result.over.length} cell(s) pass their tested rate:\n${lines}\n`);
}

/** A change the document refuses (the last zone serving), as the error it would be, before anything is read or written. */
function refusedChange(doc: ZonesDocument, zoneIds: readonly string[], zone: string, weight: number): void {
  try {
    withZoneWeight(doc, zone, weight, { zones: zoneIds });
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}
