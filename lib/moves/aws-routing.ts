import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { MappingDocument } from '../mapping/types';
import { ConcurrentWriteError, MappingStore, StoreError } from '../mapping-store/store';
import { publishMapping, PublishRefusedError } from '../mapping-store/publish';
import { RoutingControl, VersionProbe } from './routing-control';
import { Clock, MoveError } from './types';

export interface S3RoutingControlOptions {
  /** Every region's mapping bucket; the first is where the current document is read. */
  readonly stores: readonly MappingStore[];
  /** Router groups in rollout order. */
  readonly groups: readonly string[];
  readonly routerSlots?: number;
  /** Which version each router group serves, judged on reports made after `since` (the publish). */
  readonly probe: (since: Date) => ReturnType<VersionProbe>;
  readonly clock: Clock;
  /** @default 10 min */
  readonly timeoutMs?: number;
  /** @default 15 s */
  readonly pollMs?: number;
  readonly progress?: (line: string) => void;
}

/**
 * Routing of the AWS fleet for a move: the mapping buckets of every region (lib/mapping-store, as
 * `cellctl mapping publish` writes them, every group at once: a freeze and a flip are the move's own
 * change, checked by the move itself, so no bake between groups), and the version each router
 * group serves.
 */
export class S3RoutingControl implements RoutingControl {
  public readonly description: string;
  private publishedAt?: Date;

  constructor(private readonly o: S3RoutingControlOptions) {
    if (o.stores.length === 0) throw new MoveError('no mapping bucket to publish to');
    if (o.groups.length === 0) throw new MoveError('no router group in the fleet config');
    this.description = o.stores.map((s) => `s3://${s.bucket}`).join(', ');
  }

  public async read(): Promise<MappingDocument> {
    let stored;
    try {
      stored = await this.o.stores[0].readGroup(this.o.groups[0]);
    } catch (error) {
      if (error instanceof StoreError) throw new MoveError(error.message);
      throw error;
    }
    if (!stored) throw new MoveError(`s3://${this.o.stores[0].bucket} has no mapping for router group ${this.o.groups[0]} yet; deploy the router stacks (they seed it) or \`cellctl mapping publish\` one`);
    return stored.document;
  }

  public async publish(doc: MappingDocument, previous: number): Promise<void> {
    const current = await this.read();
    if (current.version !== previous) {
      throw new MoveError(`the mapping went from v${previous} to v${current.version} while the move was changing it (someone published); run the move again (\`cellctl move resume\`)`);
    }
    this.publishedAt = this.o.clock.now();
    try {
      await publishMapping(this.o.stores, doc, { groups: this.o.groups, bakeSeconds: 0, routerSlots: this.o.routerSlots, progress: this.o.progress });
    } catch (error) {
      if (error instanceof PublishRefusedError || error instanceof ConcurrentWriteError || error instanceof StoreError) {
        throw new MoveError(`publishing mapping v${doc.version} failed: ${error.message}; run the move again (\`cellctl move resume\`)`);
      }
      throw error;
    }
  }

  public async waitApplied(version: number): Promise<void> {
    const timeout = this.o.timeoutMs ?? 600_000;
    const deadline = this.o.clock.now().getTime() + timeout;
    const since = this.publishedAt ?? this.o.clock.now();
    for (;;) {
      const served = await this.o.probe(since).catch(() => ({} as Record<string, number | undefined>));
      const lagging = Object.entries(served).filter(([, v]) => v === undefined || v < version);
      if (Object.keys(served).length > 0 && lagging.length === 0) return;
      if (this.o.clock.now().getTime() > deadline) {
        const names = Object.keys(served).length === 0 ? 'no router group reported' : lagging.map(([g, v]) => `${g} serves ${v === undefined ? 'nothing yet' : `v${v}`}`).join(', ');
        throw new MoveError(`routers did not apply mapping v${version} within ${Math.round(timeout / 1000)} s (${names}); check the router groups (\`cellctl mapping history\`, their dashboards), then \`cellctl move resume\``);
      }
      await this.o.clock.sleep(this.o.pollMs ?? 15_000);
    }
  }
}

/**
 * The version every router task of each group and region serves, from the agents'
 * `CellRouter/MappingVersion` metric (one data point per task per minute, dimension RouterGroup).
 * Only a whole one-minute period that began after `since` counts, with its Minimum over the tasks:
 * a task that has not reported in that minute could still serve an older version. So a wait lasts
 * about two minutes after the routers have applied a version (CloudWatch's standard resolution is
 * one minute: Amazon CloudWatch User Guide, "Metrics concepts", resolution).
 */
export function routerMetricProbe(
  clients: readonly { readonly region: string; readonly client: CloudWatchClient }[],
  groups: readonly string[],
  clock: Clock,
): (since: Date) => ReturnType<VersionProbe> {
  return async (from) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { GetMetricDataCommand } = require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
    const out: Record<string, number | undefined> = {};
    const firstWholeMinute = Math.ceil(from.getTime() / 60_000) * 60_000;
    const now = clock.now().getTime();
    for (const { region, client } of clients) {
      const response = await client.send(new GetMetricDataCommand({
        StartTime: new Date(firstWholeMinute),
        EndTime: new Date(now),
        ScanBy: 'TimestampDescending',
        MetricDataQueries: groups.map((group, i) => ({
          Id: `g${i}`,
          MetricStat: { Metric: { Namespace: 'CellRouter', MetricName: 'MappingVersion', Dimensions: [{ Name: 'RouterGroup', Value: group }] }, Period: 60, Stat: 'Minimum' },
          ReturnData: true,
        })),
      }));
      for (const [i, group] of groups.entries()) {
        const series = response.MetricDataResults?.find((r) => r.Id === `g${i}`);
        // Periods that are over: a period still running may lack some tasks' points.
        const complete = (series?.Timestamps ?? []).map((t, j) => ({ at: new Date(t).getTime(), value: series!.Values![j] }))
          .filter((p) => p.at >= firstWholeMinute && p.at + 60_000 <= now);
        complete.sort((a, b) => b.at - a.at);
        out[`${region}/${group}`] = complete[0]?.value;
      }
    }
    return out;
  };
}
