import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * Which mapping version each router task serves, reported quickly (seconds, not CloudWatch's
 * one-minute periods) so that a move waits only as long as its routers take:
 *
 *   served/<group>/<task id>.json   in the region's mapping bucket, one object per router task
 *
 * The agent writes it right after HAProxy has a new version in force, then again every heartbeat
 * (so a reader can tell a live task from one killed without cleanup: its object stops changing),
 * and once more with `stopped` when the task is told to stop (a scale-in, a deploy). The task role
 * may write only its own group's prefix (grantServedReport, lib/constructs/router/mapping-bucket.ts);
 * the mapping bucket expires objects nobody refreshes.
 */
export const SERVED_PREFIX = 'served/';
export const servedPrefix = (group: string) => `${SERVED_PREFIX}${group}/`;

/**
 * How old a report may be and still count as a live task's (the move's probe, lib/operations/moves/aws-routing.ts).
 * An agent reports at least every heartbeat and acts only on its polls, so both must stay well
 * inside it: bin/router-agent.ts refuses REPORT_SECONDS or POLL_SECONDS above half of it.
 */
export const SERVED_FRESHNESS_MS = 30_000;
const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
export function servedKey(group: string, taskId: string): string {
  if (!TASK_ID.test(taskId)) throw new Error(`router task id \`${taskId}\` must be 1-128 characters of A-Z, a-z, 0-9, '_', '.', '-'`);
  return `${servedPrefix(group)}${taskId}.json`;
}

/** One router task's report. */
export interface ServedReport {
  readonly taskId: string;
  readonly group: string;
  /** The version HAProxy has in force (its meta map); null while it has none (starting, or HAProxy down). */
  readonly version: number | null;
  /** When this task first had `version` in force. */
  readonly appliedAt: string | null;
  /** When this report was written (the agent's clock; readers judge freshness by S3's LastModified). */
  readonly reportedAt: string;
  /** The task was told to stop: it takes no new connections; in-flight ones end within its stop timeout. */
  readonly stopped?: true;
  /** The zones document version whose weights its servers carry (`cellctl zone drain` waits on it); absent: none. */
  readonly zonesVersion?: number;
}

/** A report read back, or why it cannot be: null for anything that is not a report. */
export function parseServedReport(text: string): ServedReport | null {
  try {
    const r = JSON.parse(text) as Partial<ServedReport>;
    if (typeof r !== 'object' || r === null || typeof r.taskId !== 'string' || typeof r.group !== 'string' || typeof r.reportedAt !== 'string')
      return null;
    const version = r.version;
    if (version === undefined || (version !== null && !(Number.isInteger(version) && version >= 0))) return null;
    return {
      taskId: r.taskId,
      group: r.group,
      version,
      appliedAt: typeof r.appliedAt === 'string' ? r.appliedAt : null,
      reportedAt: r.reportedAt,
      ...(r.stopped === true ? { stopped: true as const } : {}),
      ...(Number.isInteger(r.zonesVersion) && r.zonesVersion! > 0 ? { zonesVersion: r.zonesVersion } : {}),
    };
  } catch {
    return null;
  }
}

export interface ServedReporterOptions {
  /** A report is rewritten at least this often while nothing changes. @default 10000 */
  readonly heartbeatMs?: number;
  /** A write that takes longer is abandoned (and tried again at the next update). @default 5000 */
  readonly timeoutMs?: number;
  /**
   * After a failed write the next waits this long, doubling after each failure up to half the
   * heartbeat, whatever the version: the agent ticks every 250 ms under a freeze, and a write per tick
   * to a failing S3 (throttling, an outage, a revoked grant) adds load where it hurts. Reset by a
   * write that succeeds. @default 500
   */
  readonly retryBaseMs?: number;
  readonly now?: () => number;
  /** Structured log lines (JSON): a failed write is logged once until one succeeds again. */
  readonly emit?: (line: string) => void;
}

/**
 * Writes one router task's report. `update` is called after every agent tick with the version in
 * force; it writes at once when that version changed, else when the heartbeat is due. Writes never
 * overlap: an update during a write is written right after it. Errors are logged, never thrown: the
 * report must not disturb routing.
 */
export class S3ServedReporter {
  public readonly key: string;
  private reported?: { version: number | null; at: number };
  private appliedAt: { version: number | null; at: number } | undefined;
  private writing?: Promise<void>;
  private pending?: { version: number | null; stopped: boolean };
  private zonesVersion?: number;
  /** The zones version of the last report written. */
  private reportedZones?: number;
  private failing = false;
  /** While writes fail: when the next may be tried, and the wait after it. */
  private retry?: { at: number; waitMs: number };
  private stopped = false;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly group: string,
    private readonly taskId: string,
    private readonly o: ServedReporterOptions = {},
  ) {
    this.key = servedKey(group, taskId);
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** The version in force now (undefined: none). Returns once any write this started has ended. */
  public update(version: number | undefined, zonesVersion?: number): Promise<void> {
    if (this.stopped) return this.writing ?? Promise.resolve();
    const v = version ?? null;
    if (this.appliedAt?.version !== v) this.appliedAt = { version: v, at: this.now() };
    this.zonesVersion = zonesVersion;
    const zonesChanged = zonesVersion !== this.reportedZones;
    const due = !this.reported || this.reported.version !== v || zonesChanged || this.now() - this.reported.at >= (this.o.heartbeatMs ?? 10_000);
    if (!due || (this.retry && this.now() < this.retry.at)) return this.writing ?? Promise.resolve();
    return this.enqueue({ version: v, stopped: false });
  }

  /** The task is stopping: one last report says so (with the version still in force for in-flight requests). */
  public stop(version: number | undefined): Promise<void> {
    this.stopped = true;
    return this.enqueue({ version: version ?? null, stopped: true });
  }

  private enqueue(next: { version: number | null; stopped: boolean }): Promise<void> {
    this.pending = next;
    if (!this.writing) {
      this.writing = (async () => {
        while (this.pending) {
          const item = this.pending;
          this.pending = undefined;
          await this.write(item);
        }
      })().finally(() => {
        this.writing = undefined;
      });
    }
    return this.writing;
  }

  private async write(item: { version: number | null; stopped: boolean }): Promise<void> {
    const at = this.now();
    const report: ServedReport = {
      taskId: this.taskId,
      group: this.group,
      version: item.version,
      appliedAt: this.appliedAt?.version === item.version ? new Date(this.appliedAt.at).toISOString() : null,
      reportedAt: new Date(at).toISOString(),
      ...(item.stopped ? { stopped: true as const } : {}),
      ...(this.zonesVersion !== undefined ? { zonesVersion: this.zonesVersion } : {}),
    };
    try {
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key,
          Body: `${JSON.stringify(report)}\n`,
          ContentType: 'application/json',
          CacheControl: 'no-store',
        }),
        { abortSignal: AbortSignal.timeout(this.o.timeoutMs ?? 5000) },
      );
      this.reported = { version: item.version, at };
      this.reportedZones = report.zonesVersion;
      if (this.failing)
        this.o.emit?.(JSON.stringify({ level: 'info', event: 'served-report-recovered', group: this.group, key: this.key, version: item.version }));
      this.failing = false;
      this.retry = undefined;
    } catch (error) {
      const base = this.o.retryBaseMs ?? 500;
      const waitMs = this.retry ? Math.min(this.retry.waitMs * 2, Math.max(base, (this.o.heartbeatMs ?? 10_000) / 2)) : base;
      this.retry = { at: this.now() + waitMs, waitMs };
      if (!this.failing) {
        this.o.emit?.(
          JSON.stringify({
            level: 'warn',
            event: 'served-report-error',
            group: this.group,
            key: `s3://${this.bucket}/${this.key}`,
            error: `${(error as Error).name}: ${(error as Error).message}`,
            hint: 'moves wait for every router task to report the version it serves; the task role needs s3:PutObject on served/<group>/* of the mapping bucket (grantServedReport, lib/constructs/router/mapping-bucket.ts)',
          }),
        );
      }
      this.failing = true;
    }
  }
}
