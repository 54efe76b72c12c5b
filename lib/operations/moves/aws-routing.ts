import type { S3Client } from '@aws-sdk/client-s3';
import { MappingDocument } from '../../domain/mapping/types';
import { ConcurrentWriteError, MappingStore, statusOf, StoreError } from '../../adapters/mapping-store/store';
import { publishMapping, PublishRefusedError } from '../../adapters/mapping-store/publish';
import { parseServedReport, SERVED_FRESHNESS_MS, servedPrefix } from '../../runtime/router/served';
import { RoutingControl } from './routing-control';
import { Clock, MoveError } from '../../domain/moves/types';

/**
 * What one router group of one region serves, from its tasks' reports (`served/<group>/<task>.json`,
 * lib/runtime/router/served.ts):
 * - `serving`: the tasks that reported within the freshness window, with the version each has in
 *   force (null: none). A task that said it stopped still counts within that window: its HAProxy
 *   finishes the requests it holds.
 * - `no-task`: no fresh report, and the newest report says its task stopped: the group has no
 *   running task (scaled to 0), so none of its routers can send a request anywhere.
 * - `silent`: no fresh report, and the newest one is from a task that did not say it stopped (killed
 *   without cleanup, or its agent cannot write): nothing is known about what the group serves.
 * - `never`: no report at all: the group's agents do not report (an image from before the report
 *   existed, the group not deployed yet), or it has had no task for longer than the reports are kept.
 */
export type GroupServing =
  | {
      readonly state: 'serving';
      /**
       * `staleSeconds`: a task ECS still runs whose agent has not reported for that long (hung, or cut
       * off from S3) while its HAProxy may still serve the version it last reported; such a task
       * counts with that version, so a move waits for it rather than forgetting it.
       */
      readonly tasks: readonly { readonly taskId: string; readonly version: number | null; readonly staleSeconds?: number }[];
    }
  | { readonly state: 'no-task'; readonly stoppedAt: string }
  | { readonly state: 'silent'; readonly newest: { readonly taskId: string; readonly version: number | null; readonly ageSeconds: number } }
  | { readonly state: 'never' };

/** Per `<region>/<group>`. */
export type ServedProbe = () => Promise<Readonly<Record<string, GroupServing>>>;

/** Whether a group's state means every router of it serves `version` or newer (or that it has no router). */
export function groupApplied(serving: GroupServing, version: number): boolean {
  if (serving.state === 'no-task') return true;
  return serving.state === 'serving' && serving.tasks.every((t) => t.version !== null && t.version >= version);
}

/** One line per group that does not serve `version` yet, for progress and errors. */
export function describeServing(name: string, serving: GroupServing, version?: number): string {
  switch (serving.state) {
    case 'serving': {
      const behind = serving.tasks.filter((t) => version === undefined || t.version === null || t.version < version);
      return `${name}: ${behind
        .map((t) =>
          t.staleSeconds !== undefined
            ? `task ${t.taskId} is running but its agent last reported ${t.staleSeconds} s ago (${t.version === null ? 'no mapping' : `v${t.version}`}); its HAProxy may still serve that: read its agent log, or stop it (aws ecs stop-task) so the service replaces it`
            : `task ${t.taskId} serves ${t.version === null ? 'no mapping (HAProxy has none in force, or it has not reported yet)' : `v${t.version}`}`,
        )
        .join(', ')}`;
    }
    case 'no-task':
      return `${name}: no running task (the last one stopped at ${serving.stoppedAt})`;
    case 'silent':
      return `${name}: no task has reported for ${serving.newest.ageSeconds} s (the last report: task ${serving.newest.taskId}, ${serving.newest.version === null ? 'no mapping' : `v${serving.newest.version}`}); is the group's service running, and can its agents write served/ (their log says served-report-error)?`;
    case 'never':
      return `${name}: no router task has ever reported the version it serves (served/ of its mapping bucket is empty); deploy the router groups (with an agent image that reports what it serves), or, if the group has had no task for over a week, start one`;
  }
}

export interface S3RoutingControlOptions {
  /** Every region's mapping bucket; the first is where the current document is read. */
  readonly stores: readonly MappingStore[];
  /** Router groups in rollout order. */
  readonly groups: readonly string[];
  readonly routerSlots?: number;
  /** What each router group of each region serves (servedReportProbe). */
  readonly probe: ServedProbe;
  readonly clock: Clock;
  /** How long routers may take to apply a version before the move stops. @default 10 min */
  readonly timeoutMs?: number;
  /** How long a group may stay `silent` or `never` while the move waits before it stops. @default 60 s */
  readonly silentLimitMs?: number;
  /** @default 100 ms */
  readonly pollMs?: number;
  readonly progress?: (line: string) => void;
  /** Aborted when the operator interrupts `cellctl move`: a wait ends at once. */
  readonly signal?: AbortSignal;
}

/** The keys a document freezes (tenants, and bucket ranges as `from-to`). */
function frozenKeys(doc: MappingDocument): Set<string> {
  return new Set([...(doc.freeze?.exact ?? []).map((t) => `t:${t}`), ...(doc.freeze?.buckets ?? []).map((b) => `b:${b.from}-${b.to}`)]);
}

/**
 * Routing of the AWS fleet for a move: the mapping buckets of every region (lib/adapters/mapping-store, as
 * `cellctl mapping publish` writes them, every group at once: a freeze and a flip are the move's own
 * change, checked by the move itself, so no bake between groups), and the version each router
 * group serves, from its tasks' reports in its region's mapping bucket.
 */
export class S3RoutingControl implements RoutingControl {
  public readonly description: string;

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
    if (!stored)
      throw new MoveError(
        `s3://${this.o.stores[0].bucket} has no mapping for router group ${this.o.groups[0]} yet; deploy the router stacks (they seed it) or \`cellctl mapping publish\` one`,
      );
    return stored.document;
  }

  /** The probe, tried 3 times 0.5 s apart: S3 answers an occasional 500 or 503 that a retry gets past. */
  private async probe(): Promise<Readonly<Record<string, GroupServing>>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.o.probe();
      } catch (error) {
        if (error instanceof MoveError) throw error;
        if (attempt >= 3) throw new MoveError(`reading what the routers serve failed: ${(error as Error).name}: ${(error as Error).message}`);
        await this.o.clock.sleep(500);
      }
    }
  }

  public async publish(doc: MappingDocument, previous: number): Promise<void> {
    const current = await this.read();
    if (current.version !== previous) {
      throw new MoveError(
        `the mapping went from v${previous} to v${current.version} while the move was changing it (someone published); run the move again (\`cellctl move resume\`)`,
      );
    }
    // A new freeze only when every group is known to report what it serves, and serves the current
    // version: else the move could not tell when the freeze holds (a silent group), or would start
    // the freeze's clock while waiting for a group that is behind already (it waits for that before
    // publishing, unfrozen). Lifting a freeze (a flip, an unfreeze, an abort) is never held back.
    const before = frozenKeys(current);
    if ([...frozenKeys(doc)].some((k) => !before.has(k))) {
      // A running task whose agent went quiet cannot apply the freeze either, whatever it last reported.
      const unknown = Object.entries(await this.probe()).filter(
        ([, g]) => g.state === 'silent' || g.state === 'never' || (g.state === 'serving' && g.tasks.some((t) => t.staleSeconds !== undefined)),
      );
      if (unknown.length > 0) {
        throw new MoveError(
          `not freezing: the move could not tell when every router applied the freeze:\n  ${unknown.map(([name, g]) => describeServing(name, g)).join('\n  ')}\nnothing was published; fix the router groups, then \`cellctl move resume\``,
        );
      }
      await this.waitApplied(current.version);
    }
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
    const silentLimit = this.o.silentLimitMs ?? 60_000;
    const started = this.o.clock.now().getTime();
    const silentSince = new Map<string, number>();
    const noted = new Set<string>();
    let failure: MoveError | undefined;
    for (;;) {
      if (this.o.signal?.aborted)
        throw new MoveError(`interrupted while waiting for the routers to serve mapping v${version}; \`cellctl move resume\` waits again`);
      let served: Readonly<Record<string, GroupServing>>;
      try {
        served = await this.probe();
        failure = undefined;
      } catch (error) {
        // S3 answered an error (throttling, a 500) or did not answer: look again, until the timeout.
        if (!(error instanceof MoveError)) throw error;
        if (!failure) this.o.progress?.(`${error.message}; trying again`);
        failure = error;
        if (this.o.clock.now().getTime() - started > timeout)
          throw new MoveError(
            `routers did not report serving mapping v${version} within ${Math.round(timeout / 1000)} s: ${error.message}; \`cellctl move resume\` when S3 answers again`,
          );
        await this.o.clock.sleep(this.o.pollMs ?? 100);
        continue;
      }
      const now = this.o.clock.now().getTime();
      const lagging = Object.entries(served).filter(([, g]) => !groupApplied(g, version));
      for (const [name, g] of Object.entries(served)) {
        if (g.state === 'no-task' && !noted.has(name)) {
          noted.add(name);
          this.o.progress?.(`${describeServing(name, g)}: counted as applied`);
        }
      }
      if (lagging.length === 0) return;
      for (const [name, g] of Object.entries(served)) {
        if (g.state === 'silent' || g.state === 'never') {
          if (!silentSince.has(name)) silentSince.set(name, now);
        } else {
          silentSince.delete(name);
        }
      }
      const silent = [...silentSince].filter(([, since]) => now - since >= silentLimit).map(([name]) => name);
      if (silent.length > 0 || now - started > timeout) {
        const why =
          silent.length > 0
            ? `nothing is known about ${silent.join(', ')} for ${Math.round(silentLimit / 1000)} s`
            : `not within ${Math.round(timeout / 1000)} s`;
        throw new MoveError(
          `routers did not report serving mapping v${version} (${why}):\n  ${lagging.map(([name, g]) => describeServing(name, g, version)).join('\n  ')}\ncheck the router groups (\`cellctl mapping history\`, their dashboards and agent logs), then \`cellctl move resume\` (or \`cellctl move abort\`)`,
        );
      }
      await this.o.clock.sleep(this.o.pollMs ?? 100);
    }
  }
}

/** One listing or read of the reports; a hung connection fails the probe, and the wait looks again. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface ServedReportProbeOptions {
  /** A report older than this does not count (3 heartbeats of 10 s). @default 30 s */
  readonly freshnessMs?: number;
  /**
   * "Now", to judge a report's age by: by default the `Date` of S3's own answer to the listing, so
   * that a report's age is measured on S3's clock alone (its LastModified) whatever this machine's
   * clock says.
   */
  readonly clock?: Clock;
  /**
   * The ids of the tasks ECS runs for a group's service (`ecsRunningTasks`). With it, a task whose
   * report went stale without saying `stopped` counts while ECS still runs it (an agent that hung
   * while its HAProxy serves an older mapping), and is dropped only once ECS no longer runs it; a
   * running task with no report at all counts as serving no mapping yet. Without it, a stale report
   * is dropped after `freshnessMs`.
   */
  readonly runningTasks?: (region: string, group: string) => Promise<ReadonlySet<string>>;
}

/** The ids (last part of the ARN) of the tasks ECS runs for `service` in `cluster`. */
export async function ecsRunningTasks(ecs: import('@aws-sdk/client-ecs').ECSClient, cluster: string, service: string): Promise<ReadonlySet<string>> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { ListTasksCommand } = require('@aws-sdk/client-ecs') as typeof import('@aws-sdk/client-ecs');
  const ids = new Set<string>();
  let token: string | undefined;
  do {
    const page = await ecs.send(new ListTasksCommand({ cluster, serviceName: service, desiredStatus: 'RUNNING', nextToken: token }), {
      abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    for (const arn of page.taskArns ?? []) ids.add(arn.split('/').pop()!);
    token = page.nextToken;
  } while (token);
  return ids;
}

/**
 * What each router group of each region serves, from `served/<group>/` of the region's mapping
 * bucket: one listing per group and region (its LastModified tells a report's age), and a GET of
 * each fresh report whose ETag changed since the last look.
 */
export function servedReportProbe(
  buckets: readonly { readonly region: string; readonly s3: S3Client; readonly bucket: string }[],
  groups: readonly string[],
  options: ServedReportProbeOptions = {},
): ServedProbe {
  const freshness = options.freshnessMs ?? SERVED_FRESHNESS_MS;
  // S3's clock: the Date header of each client's latest answer (kept by a deserialize middleware).
  const serverNow = new Map<S3Client, number>();
  if (!options.clock) {
    for (const { s3 } of buckets) {
      s3.middlewareStack.add(
        (next) => async (args) => {
          const result = await next(args);
          const date = (result.response as { headers?: Record<string, string> } | undefined)?.headers?.date;
          if (date && !Number.isNaN(Date.parse(date))) serverNow.set(s3, Date.parse(date));
          return result;
        },
        { step: 'deserialize', name: 'servedReportServerDate', override: true },
      );
    }
  }
  const cache = new Map<string, { etag: string; report: ReturnType<typeof parseServedReport> }>();
  return async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
    const { GetObjectCommand, ListObjectsV2Command } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
    const read = async (s3: S3Client, bucket: string, key: string, etag: string) => {
      const cached = cache.get(`${bucket}/${key}`);
      if (cached?.etag === etag) return cached.report;
      let text: string;
      let answered: string | undefined;
      try {
        const response = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        text = await response.Body!.transformToString();
        answered = response.ETag;
      } catch (error) {
        // Expired between the listing and the read: no report.
        if (statusOf(error) === 404) return null;
        throw error;
      }
      const report = parseServedReport(text);
      cache.set(`${bucket}/${key}`, { etag: answered ?? etag, report });
      return report;
    };
    const one = async ({ region, s3, bucket }: (typeof buckets)[number], group: string): Promise<[string, GroupServing]> => {
      const objects: { key: string; etag: string; modified: number }[] = [];
      let token: string | undefined;
      do {
        const response = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: servedPrefix(group), ContinuationToken: token }), {
          abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        for (const o of response.Contents ?? []) {
          if (o.Key && o.LastModified && o.Key.endsWith('.json'))
            objects.push({ key: o.Key, etag: o.ETag ?? '', modified: o.LastModified.getTime() });
        }
        token = response.IsTruncated ? response.NextContinuationToken : undefined;
      } while (token);
      const now = options.clock?.now().getTime() ?? serverNow.get(s3) ?? Date.now();
      const name = `${region}/${group}`;
      if (objects.length === 0) return [name, { state: 'never' }];
      const fresh = objects.filter((o) => now - o.modified <= freshness);
      if (options.runningTasks) {
        const running = await options.runningTasks(region, group);
        const idOf = (key: string) => key.slice(servedPrefix(group).length, -'.json'.length);
        const tasks: { taskId: string; version: number | null; staleSeconds?: number }[] = [];
        for (const o of fresh) {
          const report = await read(s3, bucket, o.key, o.etag);
          tasks.push({ taskId: report?.taskId ?? idOf(o.key), version: report?.version ?? null });
        }
        const reported = new Set(objects.map((o) => idOf(o.key)));
        for (const o of objects.filter((x) => !fresh.includes(x) && running.has(idOf(x.key)))) {
          const report = await read(s3, bucket, o.key, o.etag);
          // A stopped report from a task ECS still lists is the task draining: it serves its version until it goes.
          tasks.push({
            taskId: report?.taskId ?? idOf(o.key),
            version: report?.version ?? null,
            staleSeconds: Math.round((now - o.modified) / 1000),
          });
        }
        for (const id of running) if (!reported.has(id)) tasks.push({ taskId: id, version: null });
        if (tasks.length > 0) return [name, { state: 'serving', tasks }];
        const newest = objects.reduce((a, b) => (b.modified > a.modified ? b : a));
        return [name, { state: 'no-task', stoppedAt: new Date(newest.modified).toISOString() }];
      }
      if (fresh.length > 0) {
        const reports = await Promise.all(fresh.map(async (o) => ({ o, report: await read(s3, bucket, o.key, o.etag) })));
        return [
          name,
          {
            state: 'serving',
            tasks: reports.map(({ o, report }) => ({
              taskId: report?.taskId ?? o.key.slice(servedPrefix(group).length, -'.json'.length),
              version: report?.version ?? null,
            })),
          },
        ];
      }
      const newest = objects.reduce((a, b) => (b.modified > a.modified ? b : a));
      const report = await read(s3, bucket, newest.key, newest.etag);
      if (report?.stopped) return [name, { state: 'no-task', stoppedAt: new Date(newest.modified).toISOString() }];
      return [
        name,
        {
          state: 'silent',
          newest: { taskId: report?.taskId ?? newest.key, version: report?.version ?? null, ageSeconds: Math.round((now - newest.modified) / 1000) },
        },
      ];
    };
    const entries = await Promise.all(buckets.flatMap((b) => groups.map((g) => one(b, g))));
    return Object.fromEntries(entries);
  };
}
