import type { Fleet } from '../domain/fleet';
import { routerParameters } from '../domain/names';
import { failOverWriters, FULL_WEIGHT, undrainSteps, weightOf, WriterOutcome, ZonesDocument } from '../domain/zones';
import { fleetFrom, mappingBucketOf, s3Client } from './context';
import { CliError, CliIo } from './io';

/** What a zone command in AWS works on: the region's zones, its mapping bucket, its router NLBs and groups. */
export interface AwsZoneTarget {
  readonly fleet: Fleet;
  readonly region: string;
  readonly zones: readonly string[];
  readonly groups: readonly string[];
  /** Path-style S3 addressing (an S3-compatible server). */
  readonly forcePathStyle?: boolean;
}

export function awsZoneTarget(configPath: string, region: string | undefined, zone?: string, forcePathStyle?: boolean): AwsZoneTarget {
  const fleet = fleetFrom(configPath);
  if (!region) throw new CliError(`give --region (one of ${Object.keys(fleet.regions).join(', ')}), or --local for the local fleet`, 2);
  const config = fleet.regions[region];
  if (!config) throw new CliError(`--region ${region}: not one of the fleet's regions (${Object.keys(fleet.regions).join(', ')})`, 2);
  const zones = config.availabilityZones;
  if (zone !== undefined && !zones.includes(zone))
    throw new CliError(`zone ${zone}: not one of ${region}'s zones in the fleet file (${zones.join(', ')}); give an AZ ID`, 2);
  return { fleet, region, zones, groups: fleet.router.groups.map((g) => g.name), forcePathStyle };
}

/** The region's router NLB ARNs, from the parameters their stacks write (the entry's, or each lane's). */
export async function routerLoadBalancers(t: AwsZoneTarget): Promise<string[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetParametersCommand, SSMClient } = require('@aws-sdk/client-ssm') as typeof import('@aws-sdk/client-ssm');
  const lanes = t.fleet.router.lanes;
  const names = lanes
    ? Array.from({ length: lanes.count }, (_, i) => routerParameters.laneLoadBalancerArn(t.fleet.app, i + 1))
    : [routerParameters.loadBalancerArn(t.fleet.app)];
  const ssm = new SSMClient({ region: t.region });
  try {
    const found = new Map<string, string>();
    for (let i = 0; i < names.length; i += 10) {
      const { Parameters } = await ssm.send(new GetParametersCommand({ Names: names.slice(i, i + 10) }));
      for (const p of Parameters ?? []) if (p.Name && p.Value) found.set(p.Name, p.Value);
    }
    const missing = names.filter((n) => !found.has(n));
    if (missing.length > 0)
      throw new CliError(
        `${t.region}: the router NLB parameters ${missing.join(', ')} are missing: deploy the router stacks (they write them), then drain again`,
      );
    return names.map((n) => found.get(n)!);
  } finally {
    ssm.destroy();
  }
}

const ops = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  require('../operations/zones') as typeof import('../operations/zones');
const arc = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  require('../adapters/aws/zonal-shift') as typeof import('../adapters/aws/zonal-shift');

export interface AwsChangeReport {
  readonly region: string;
  readonly zone: string;
  readonly weightBefore: number;
  readonly weight: number;
  readonly version: number;
  /** Writes that lost to another operator's and were made again. */
  readonly conflicts: number;
  /** The router NLBs' zonal shifts (a drain to 0 starts or extends them; the last undrain step cancels them). */
  readonly shifts: readonly {
    readonly loadBalancer: string;
    readonly action: 'started' | 'updated' | 'cancelled';
    readonly zonalShiftId?: string;
    readonly expiryTime?: string;
  }[];
  /** When every router task reported the version in force, and how many. */
  readonly carried?: { readonly ms: number; readonly tasks: number };
}

/**
 * One weight change in AWS: the zones document (If-Match), then for a drain to 0 the router NLBs'
 * zonal shifts away from the zone (started, or extended), for the final undrain step their
 * cancellation, then the wait for every router task to carry the version.
 */
export async function changeAwsZoneWeight(
  t: AwsZoneTarget,
  o: { zone: string; weight: number; reason?: string; expiresIn: string; waitMs: number; shift: boolean; cancelShift?: boolean },
): Promise<AwsChangeReport> {
  const { MappingStore } = require('../adapters/mapping-store') as typeof import('../adapters/mapping-store'); // eslint-disable-line @typescript-eslint/no-require-imports -- loaded on first use
  const bucket = await mappingBucketOf(t.fleet, t.region);
  const s3 = s3Client({ region: t.region, forcePathStyle: t.forcePathStyle }, t.region);
  try {
    const store = new MappingStore(s3, bucket);
    const started = Date.now();
    let change;
    try {
      change = await ops().changeAwsZone({ store, region: t.region, zones: t.zones, zone: o.zone, weight: o.weight, reason: o.reason });
    } catch (error) {
      throw new CliError((error as Error).message);
    }
    const shifts: AwsChangeReport['shifts'][number][] = [];
    if ((o.shift && o.weight === 0) || o.cancelShift) {
      const client = new (arc().ZonalShiftClient)({ region: t.region });
      for (const loadBalancer of await routerLoadBalancers(t)) {
        try {
          if (o.weight === 0) {
            const { shift, started: isNew } = await client.shiftAway({
              resourceIdentifier: loadBalancer,
              awayFrom: o.zone,
              expiresIn: o.expiresIn,
              comment: `cellctl zone drain ${o.zone}: ${o.reason ?? 'drained'}`,
            });
            shifts.push({
              loadBalancer,
              action: isNew ? 'started' : 'updated',
              zonalShiftId: shift.zonalShiftId,
              expiryTime: shift.expiryTime.toISOString(),
            });
          } else {
            for (const s of await client.cancelAway(loadBalancer, o.zone))
              shifts.push({ loadBalancer, action: 'cancelled', zonalShiftId: s.zonalShiftId });
          }
        } catch (error) {
          throw new CliError(
            `${loadBalancer}: ${(error as Error).message}; the zones document is at version ${change.after.version} (the routers' servers follow it either way); run the command again to retry the zonal shift`,
          );
        }
      }
    }
    let carried: AwsChangeReport['carried'];
    if (o.waitMs > 0) {
      try {
        carried = await ops().waitZonesCarried({ s3, bucket, groups: t.groups, version: change.after.version, since: started, timeoutMs: o.waitMs });
      } catch (error) {
        throw new CliError((error as Error).message);
      }
    }
    return {
      region: t.region,
      zone: o.zone,
      weightBefore: weightOf(change.before, o.zone),
      weight: o.weight,
      version: change.after.version,
      conflicts: change.conflicts,
      shifts,
      ...(carried ? { carried } : {}),
    };
  } finally {
    s3.destroy();
  }
}

export function awsChangeText(r: AwsChangeReport): string {
  const lines = [
    `${r.region} ${r.zone} ${r.weightBefore}% → ${r.weight}% (zones version ${r.version}${r.conflicts ? `, after ${r.conflicts} concurrent changes` : ''})`,
  ];
  for (const s of r.shifts)
    lines.push(
      `  zonal shift ${s.action} on ${s.loadBalancer}${s.zonalShiftId ? ` (${s.zonalShiftId}${s.expiryTime ? `, until ${s.expiryTime}` : ''})` : ''}`,
    );
  lines.push(
    r.carried
      ? `  in force at all ${r.carried.tasks} router tasks ${(r.carried.ms / 1000).toFixed(1)} s after the write`
      : '  not waited for (--wait 0)',
  );
  return `${lines.join('\n')}\n`;
}

/** The region's zones document, read with the operator's credentials. */
export async function readAwsZonesDocument(t: AwsZoneTarget): Promise<ZonesDocument> {
  const { MappingStore } = require('../adapters/mapping-store') as typeof import('../adapters/mapping-store'); // eslint-disable-line @typescript-eslint/no-require-imports -- loaded on first use
  const bucket = await mappingBucketOf(t.fleet, t.region);
  const s3 = s3Client({ region: t.region, forcePathStyle: t.forcePathStyle }, t.region);
  try {
    return (await ops().readAwsZones(new MappingStore(s3, bucket), t.region, t.zones)).document;
  } catch (error) {
    throw new CliError((error as Error).message);
  } finally {
    s3.destroy();
  }
}

/** The names of the alarms an undrain bake watches in the region: each router group's health and each cell's errors as the routers see them. */
export function bakeAlarmNames(t: AwsZoneTarget): string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { routerGroupHealthAlarmName, routerNamePrefix } = require('../domain/names') as typeof import('../domain/names');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { regionReachOf } = require('../domain/fleet') as typeof import('../domain/fleet');
  return [
    ...t.groups.map((g) => routerGroupHealthAlarmName(t.fleet.app, t.region, g)),
    // The cells this region's routers link (router.reach), cell zero included: each has its errors alarm here.
    ...regionReachOf(t.fleet, t.region).linked.map((c) => `${routerNamePrefix(t.fleet.app, t.region)}-cell-${c.id}-errors`),
  ];
}

/** The alarms of `names` in ALARM now. */
export async function alarmsFiring(region: string, names: readonly string[]): Promise<string[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { CloudWatchClient, DescribeAlarmsCommand } = require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
  const cw = new CloudWatchClient({ region });
  try {
    const firing: string[] = [];
    for (let i = 0; i < names.length; i += 100) {
      const page = await cw.send(new DescribeAlarmsCommand({ AlarmNames: names.slice(i, i + 100), AlarmTypes: ['MetricAlarm', 'CompositeAlarm'] }));
      for (const a of [...(page.MetricAlarms ?? []), ...(page.CompositeAlarms ?? [])])
        if (a.StateValue === 'ALARM' && a.AlarmName) firing.push(a.AlarmName);
    }
    return firing;
  } finally {
    cw.destroy();
  }
}

/**
 * Undrain in AWS: each step a weight change (waited for at the routers), then a bake watching the
 * region's router group health and per-cell error alarms; one in ALARM at the end of a bake puts the
 * zone back to where it started and stops. The last step (100) cancels the router NLBs' shifts.
 */
export async function undrainAwsZone(
  io: CliIo,
  t: AwsZoneTarget,
  o: { zone: string; steps: readonly number[]; bakeMs: number; waitMs: number; expiresIn: string; json?: boolean },
): Promise<AwsChangeReport[]> {
  const start = weightOf(await readAwsZonesDocument(t), o.zone);
  let weights: number[];
  try {
    weights = undrainSteps(start, o.steps);
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  if (weights.length === 0) throw new CliError(`${t.region} ${o.zone} is at ${start}% already; nothing to undrain`);
  const reports: AwsChangeReport[] = [];
  for (const weight of weights) {
    const last = weight === FULL_WEIGHT;
    const report = await changeAwsZoneWeight(t, {
      zone: o.zone,
      weight,
      reason: last ? undefined : 'undrain',
      expiresIn: o.expiresIn,
      waitMs: o.waitMs,
      shift: false,
      cancelShift: last,
    });
    reports.push(report);
    if (!o.json) io.out(awsChangeText(report));
    if (last) break;
    await new Promise((r) => setTimeout(r, o.bakeMs));
    const firing = await alarmsFiring(t.region, bakeAlarmNames(t));
    if (firing.length > 0) {
      await changeAwsZoneWeight(t, {
        zone: o.zone,
        weight: start,
        reason: `undrain stopped at ${weight}%: ${firing.join(', ')} in ALARM`,
        expiresIn: o.expiresIn,
        waitMs: o.waitMs,
        shift: false,
      });
      throw new CliError(`undrain of ${o.zone} stopped at ${weight}%: ${firing.join(', ')} in ALARM after the bake; the zone is back at ${start}%`);
    }
  }
  return reports;
}

/**
 * `zone drain --failover-writers`: each cell of the region in turn, the canary first, its database
 * writer failed over out of `zone` through the cell's writer-failover role, waited for before the
 * next cell. Stops at the first cell that fails (the outcome says why); a run again finishes the rest.
 */
export async function failOverAwsWriters(
  t: AwsZoneTarget,
  o: { zone: string; timeoutMs: number; pollMs?: number; progress?: (outcome: WriterOutcome) => void },
): Promise<WriterOutcome[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: only this option fails writers over
  const { awsCellDatabase } = require('../adapters/aws/writer-failover') as typeof import('../adapters/aws/writer-failover');
  const cells = t.fleet.cells.filter((c) => c.region === t.region).sort((a, b) => Number(b.canary) - Number(a.canary));
  return failOverWriters(
    cells.map((c) => ({ id: c.id, database: awsCellDatabase({ app: t.fleet.app, partition: t.fleet.partition, cell: c }) })),
    { zone: o.zone, timeoutMs: o.timeoutMs, pollMs: o.pollMs, progress: o.progress },
  );
}

export function writerOutcomeText(o: WriterOutcome): string {
  switch (o.kind) {
    case 'moved':
      return `  writer of ${o.cell}: failed over ${o.from} → ${o.to} in ${(o.ms / 1000).toFixed(0)} s`;
    case 'elsewhere':
      return `  writer of ${o.cell}: in ${o.zone}, not the drained zone; left alone`;
    case 'stuck':
      return `  writer of ${o.cell}: stays in the zone: ${o.reason}`;
    case 'failed':
      return `  writer of ${o.cell}: FAILED: ${o.reason}`;
  }
}
