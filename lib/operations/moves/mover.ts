import { randomBytes } from 'crypto';
import { contractRefusals } from './schema-contract';
import { MappingDocument } from '../../domain/mapping/types';
import { homeBucketOf, tableCount } from '../../domain/mapping/homes';
import { CellData, DeltaManifest } from './cell-data';
import { HandoffStore } from './handoff';
import { admissionProblems, DEFAULT_LIMITS, MoveLimits, RateLimiter } from './limits';
import { currentCell, flipAndUnfreeze, freezeSubject, unfreezeSubject } from './routing';
import { RoutingControl } from './routing-control';
import { MoveStore, StoredMove } from './store';
import { describeSubject } from '../../domain/moves/subject';
import { AuditEntry, Clock, MoveError, MoveRecord, MoveStep, MoveSubject, STEPS, TableChecksums } from '../../domain/moves/types';
import { IncrementalVerify } from './verify';

/** Everything a mover needs, injected: stores, cells, routing, time. */
export interface MoverDeps {
  readonly store: MoveStore;
  readonly handoff: HandoffStore;
  readonly routing: RoutingControl;
  /** The data side of one cell (opened by the caller, closed by the caller). */
  readonly cell: (id: string) => CellData;
  readonly clock: Clock;
  readonly limits?: Partial<MoveLimits>;
  /** Who drives the move (operator name); recorded in every audit entry. */
  readonly actor: string;
  /** Human progress lines (stderr in the CLI). */
  readonly progress?: (line: string) => void;
  /** Called after each step is durably recorded (tests kill the mover here). */
  readonly afterStep?: (step: MoveStep, record: MoveRecord) => void | Promise<void>;
}

export interface MoveRequest {
  readonly subject: MoveSubject;
  readonly target: string;
  readonly reason?: string;
  /** @default generated from the time and the subject */
  readonly id?: string;
}

const stepIndex = (step: MoveStep) => STEPS.indexOf(step);

function limitsOf(deps: MoverDeps): MoveLimits {
  return { ...DEFAULT_LIMITS, ...deps.limits };
}

function newMoveId(subject: MoveSubject, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const what =
    subject.kind === 'tenant'
      ? subject.tenant
          .toLowerCase()
          .replace(/[^a-z0-9-]/g, '-')
          .slice(0, 40)
      : `b${subject.ranges[0].from}`;
  return `m-${stamp}-${what}-${randomBytes(2).toString('hex')}`;
}

async function audit(deps: MoverDeps, id: string, event: string, detail?: Record<string, unknown>): Promise<void> {
  const entry: AuditEntry = { at: deps.clock.now().toISOString(), actor: deps.actor, event, ...(detail ? { detail } : {}) };
  await deps.store.appendAudit(id, entry);
}

/**
 * A bucket subject with the tenants that do not follow their bucket (exact and prefix overrides)
 * set aside. Overrides that send tenants of these buckets to the source itself are refused: the
 * source's bucket record would make it refuse them (421) while the mapping still sends them there.
 */
function withOverrides(doc: MappingDocument, subject: Extract<MoveSubject, { kind: 'buckets' }>, source: string): MoveSubject {
  const inRanges = (key: string) => {
    const b = homeBucketOf(key, doc.bucketCount, subject.homes);
    return subject.ranges.some((r) => b >= r.from && b <= r.to);
  };
  const exact = Object.entries(doc.overrides.exact).filter(([key]) => inRanges(key));
  const pinnedHere = exact.filter(([, cell]) => cell === source).map(([key]) => key);
  const prefixesHere = Object.entries(doc.overrides.prefix)
    .filter(([, cell]) => cell === source)
    .map(([p]) => p);
  if (pinnedHere.length > 0 || prefixesHere.length > 0) {
    const what = [...pinnedHere.map((k) => `tenant ${k}`), ...prefixesHere.map((p) => `prefix ${p}`)].slice(0, 5).join(', ');
    throw new MoveError(
      `${describeSubject(subject)}: ${what} ${pinnedHere.length + prefixesHere.length > 1 ? 'are' : 'is'} pinned to ${source} itself, and a bucket move would make ${source} refuse them; unpin them or move them first`,
    );
  }
  return {
    kind: 'buckets',
    ranges: subject.ranges,
    except: { exact: exact.map(([key]) => key), prefixes: Object.keys(doc.overrides.prefix) },
    ...(subject.homes ? { homes: subject.homes } : {}),
  };
}

/**
 * Plans a move: the target must be an active cell other than the source, on the same schema
 * version, able to accept the subject, and the limits must allow it. Writes the record (`planned`).
 */
export async function planMove(deps: MoverDeps, request: MoveRequest): Promise<MoveRecord> {
  const limits = limitsOf(deps);
  const doc = await deps.routing.read();
  const what = describeSubject(request.subject);
  const source = currentCell(doc, request.subject);
  const target = doc.cells[request.target];
  if (!target) throw new MoveError(`cell ${request.target} is not in mapping v${doc.version} (cells: ${Object.keys(doc.cells).join(', ')})`);
  if (request.target === source) throw new MoveError(`${what} is already on ${source}`);
  if (target.state !== 'active') throw new MoveError(`cell ${request.target} is ${target.state}; only an active cell can take a move`);
  const [sourceVersion, targetVersion] = await Promise.all([deps.cell(source).schemaVersion(), deps.cell(request.target).schemaVersion()]);
  if (sourceVersion !== targetVersion) {
    throw new MoveError(
      `${source} is on schema version ${sourceVersion} and ${request.target} on ${targetVersion}: deploy the same workload version to both, then move`,
    );
  }
  // A database the factory did not build (cell zero) may lack what the mover needs: refuse, naming it.
  const refusals = contractRefusals((await deps.cell(source).contractGaps?.()) ?? []);
  if (refusals.length > 0) {
    throw new MoveError(
      `${what} cannot leave ${source}: its database does not meet the movable-schema contract (run \`cellctl cell-zero check\` for the fix of each):\n${refusals.map((r) => `  - ${r}`).join('\n')}`,
    );
  }
  // With home tables, the subject carries them: its buckets are in the mapping's bucket space, and
  // both cells learn the tables (cf_homes) before anything of the move is written or read there.
  const homes = tableCount(doc) > 1 ? doc.homes : undefined;
  const tableSubject: MoveSubject = homes ? { ...request.subject, homes } : request.subject;
  if (homes) {
    // The target always (its fence must read its old bucket records by table before the tenants
    // arrive); the source for a bucket move (its fence records a table's bucket). A tenant's own
    // record needs no table: a source without cf_homes, such as a cell zero, can still send tenants.
    for (const cell of request.subject.kind === 'buckets' ? [source, request.target] : [request.target]) {
      const data = deps.cell(cell);
      if (!data.adoptHomes)
        throw new MoveError(`${what}: cell ${cell}'s data cannot hold home tables; mapping v${doc.version} has ${tableCount(doc)}`);
      await data.adoptHomes(homes);
    }
  }
  const subject = tableSubject.kind === 'buckets' ? withOverrides(doc, tableSubject, source) : tableSubject;
  const blocking = await deps.cell(request.target).blockingRecords(subject);
  if (blocking.length > 0) {
    const b = blocking[0];
    throw new MoveError(
      `${request.target} refuses ${what}: its bucket ${b.value} was moved away to ${b.movedTo} (move ${b.moveId}); move the tenant to ${b.movedTo} instead, or move the bucket back`,
    );
  }
  return deps.store.withPlanLock(async () => {
    const problems = admissionProblems({ subject, source, target: request.target, bucketCount: doc.bucketCount }, await deps.store.list(), limits);
    if (problems.length > 0) throw new MoveError(`${what} cannot move now:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    const now = deps.clock.now();
    const record: MoveRecord = {
      id: request.id ?? newMoveId(subject, now),
      subject,
      source,
      target: request.target,
      bucketCount: doc.bucketCount,
      reason: request.reason ?? '',
      actor: deps.actor,
      createdAt: now.toISOString(),
      status: 'active',
      completed: 'planned',
      watermark: '0',
      rounds: 0,
      rowsCopied: 0,
      mappingVersions: {},
      updatedAt: now.toISOString(),
    };
    await deps.store.create(record);
    await audit(deps, record.id, 'planned', {
      subject: record.subject,
      source,
      target: record.target,
      reason: record.reason,
      mappingVersion: doc.version,
      schemaVersion: sourceVersion,
    });
    deps.progress?.(`planned ${record.id}: ${what} ${source} -> ${record.target}`);
    return record;
  });
}

async function load(deps: MoverDeps, id: string): Promise<StoredMove> {
  const stored = await deps.store.read(id);
  if (!stored) throw new MoveError(`no move ${id} in ${deps.store.description}; \`cellctl move list\` shows the moves`);
  return stored;
}

async function save(deps: MoverDeps, stored: StoredMove, patch: Partial<MoveRecord>): Promise<StoredMove> {
  const record: MoveRecord = { ...stored.record, ...patch, updatedAt: deps.clock.now().toISOString() };
  return deps.store.replace(record, stored.tag);
}

/** One delta: export from the source into the hand-off, import into the target. */
async function copyDelta(
  deps: MoverDeps,
  record: MoveRecord,
  since: string,
  prefix: string,
  limiter: RateLimiter,
): Promise<{ manifest: DeltaManifest; rows: number }> {
  const started = deps.clock.now().getTime();
  const key = `${record.id}/${prefix}`;
  const manifest = await deps.cell(record.source).exportDelta(record.subject, since, deps.handoff, key, limiter);
  await deps.cell(record.target).importDelta(record.subject, deps.handoff, key, manifest);
  const rows = Object.values(manifest.tables).reduce((n, t) => n + t.rows + t.tombstones, 0);
  const seconds = Math.max(0.001, (deps.clock.now().getTime() - started) / 1000);
  deps.progress?.(
    `${record.id} ${prefix}: ${rows} rows and tombstones (${Math.round(rows / seconds)}/s), source row_version ${since} -> ${manifest.upTo}`,
  );
  await audit(deps, record.id, 'delta', { prefix, since, upTo: manifest.upTo, tables: manifest.tables, seconds });
  return { manifest, rows };
}

async function publishIfChanged(deps: MoverDeps, change: (doc: MappingDocument) => MappingDocument): Promise<number> {
  const doc = await deps.routing.read();
  const next = change(doc);
  if (next !== doc) await deps.routing.publish(next, doc.version);
  await deps.routing.waitApplied(next.version);
  return next.version;
}

function differences(a: TableChecksums, b: TableChecksums): string[] {
  const tables = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...tables]
    .filter((t) => a[t]?.rows !== b[t]?.rows || a[t]?.checksum !== b[t]?.checksum)
    .map((t) => `${t}: source ${a[t]?.rows ?? '-'} rows / ${a[t]?.checksum ?? '-'}, target ${b[t]?.rows ?? '-'} rows / ${b[t]?.checksum ?? '-'}`);
}

/** What one run of a move keeps in memory between its steps. */
interface RunSession {
  /** The row hashes read just before the freeze; without them (a resumed run) verify reads every row. */
  verify?: IncrementalVerify;
}

/** Runs one step after `completed`; returns the record as stored after it. */
async function runStep(
  deps: MoverDeps,
  stored: StoredMove,
  step: MoveStep,
  limiter: RateLimiter,
  options: RunOptions,
  session: RunSession,
): Promise<StoredMove> {
  const limits = limitsOf(deps);
  const r = stored.record;
  const source = deps.cell(r.source);
  const target = deps.cell(r.target);
  switch (step) {
    case 'cloned': {
      // A stale copy (from an earlier move away from the target) or a partial one from a killed run.
      const cleared = await target.clear(r.subject);
      if (cleared > 0) await audit(deps, r.id, 'target-cleared', { rows: cleared });
      const { manifest, rows } = await copyDelta(deps, r, '0', 'clone', limiter);
      return save(deps, stored, { completed: 'cloned', watermark: manifest.upTo, rowsCopied: rows });
    }
    case 'caught-up': {
      let current = stored;
      for (;;) {
        const c = current.record;
        if (c.rounds >= limits.maxCatchUpRounds) break;
        const { manifest, rows } = await copyDelta(deps, c, c.watermark, `round-${c.rounds + 1}`, limiter);
        current = await save(deps, current, { watermark: manifest.upTo, rounds: c.rounds + 1, rowsCopied: c.rowsCopied + rows });
        if (rows < limits.catchUpRows) break;
      }
      return save(deps, current, { completed: 'caught-up' });
    }
    case 'frozen': {
      // Before the freeze, while the subject still works: every row hash on both sides, so that the
      // verify under the freeze only re-reads what changed after this (lib/operations/moves/verify.ts).
      const started = deps.clock.now().getTime();
      session.verify = await IncrementalVerify.start(r.subject, source, target);
      if (session.verify)
        await audit(deps, r.id, 'verify-base', { rows: session.verify.baseRows, seconds: (deps.clock.now().getTime() - started) / 1000 });
      const version = await publishIfChanged(deps, (doc) => freezeSubject(doc, r.subject, deps.clock.now().toISOString()));
      // The fence: from this commit on the source refuses the subject inside every write's
      // transaction, so the final sync below reads a source that can no longer change. A request a
      // router sent before it applied the freeze and that reaches the source now gets the freeze's
      // 503 + Retry-After from the workload ('frozen'), not 421; the flip turns the record into 421.
      await source.fence(r.subject, r.id, r.target, 'frozen');
      const frozenAt = r.frozenAt ?? deps.clock.now().toISOString();
      await audit(deps, r.id, 'frozen', { mappingVersion: version });
      return save(deps, stored, { completed: 'frozen', frozenAt, mappingVersions: { ...r.mappingVersions, freeze: version } });
    }
    case 'synced': {
      const { manifest, rows } = await copyDelta(deps, r, r.watermark, 'final', limiter);
      return save(deps, stored, { completed: 'synced', watermark: manifest.upTo, rowsCopied: r.rowsCopied + rows });
    }
    case 'verified': {
      let a: TableChecksums;
      let b: TableChecksums;
      let diff: string[];
      const started = deps.clock.now().getTime();
      if (session.verify) {
        // Only the rows changed since the row hashes read before the freeze, on each side.
        const result = await session.verify.finish();
        a = result.checksums;
        diff = result.differences;
        await audit(deps, r.id, 'verify-incremental', { changedRows: result.changed, seconds: (deps.clock.now().getTime() - started) / 1000 });
      } else {
        [a, b] = await Promise.all([source.checksums(r.subject), target.checksums(r.subject)]);
        diff = differences(a, b);
        await audit(deps, r.id, 'verify-full', { seconds: (deps.clock.now().getTime() - started) / 1000 });
      }
      session.verify = undefined;
      if (diff.length > 0) {
        // Frozen and fenced, the source cannot change: copy it whole once more and compare again.
        await audit(deps, r.id, 'verify-mismatch', { differences: diff });
        await target.clear(r.subject);
        await copyDelta(deps, r, '0', 'resync', limiter);
        [a, b] = await Promise.all([source.checksums(r.subject), target.checksums(r.subject)]);
        diff = differences(a, b);
        if (diff.length > 0)
          throw new MoveError(
            `${r.id}: source and target differ after a full copy under freeze:\n  ${diff.join('\n  ')}\nabort the move (\`cellctl move abort ${r.id}\`) and report it`,
          );
      }
      await audit(deps, r.id, 'verified', { checksums: a });
      return save(deps, stored, { completed: 'verified', checksums: a });
    }
    case 'flipped': {
      // The target accepts the subject first (stale records of an earlier move away removed), then
      // one mapping version routes it there and lifts the freeze: one router round trip less in
      // the freeze window than flipping and unfreezing apart.
      const removed = await target.clearMovedAway(r.subject);
      // From here on a request that reaches the source belongs to the target: 421, not 503.
      await source.fence(r.subject, r.id, r.target, 'moved');
      // The subject's queued work goes with it: the source keeps its messages without handling them
      // (it refuses the subject) until forget; the target handles them from now on.
      if (source.exportQueue && target.importQueue) {
        const queued = await source.exportQueue(r.subject, deps.handoff, `${r.id}/queue`);
        const added = await target.importQueue(r.subject, deps.handoff, `${r.id}/queue`);
        if (queued > 0) await audit(deps, r.id, 'queue-moved', { messages: queued, added });
      }
      const version = await publishIfChanged(deps, (doc) => flipAndUnfreeze(doc, r.subject, r.target, deps.clock.now().toISOString()));
      // A target whose work queue is SQS gets the subject's unfinished work again, re-derived from the
      // rows it now holds (SQS cannot hand over one tenant's messages); the source deletes its copies
      // of those messages instead of handling them. Repeated on resume: handlers are idempotent.
      if (target.requeue) {
        const sent = await target.requeue(r.subject);
        if (sent > 0) await audit(deps, r.id, 'work-requeued', { messages: sent });
      }
      await audit(deps, r.id, 'flipped', { mappingVersion: version, staleRecordsRemovedOnTarget: removed });
      return save(deps, stored, { completed: 'flipped', mappingVersions: { ...r.mappingVersions, flip: version } });
    }
    case 'unfrozen': {
      // The flip's version lifted the freeze already and every router was seen serving it: unless
      // the mapping changed since, there is nothing to publish or wait for.
      const doc = await deps.routing.read();
      const unfrozen = unfreezeSubject(doc, r.subject, deps.clock.now().toISOString());
      const version =
        unfrozen === doc && doc.version === r.mappingVersions.flip
          ? doc.version
          : await publishIfChanged(deps, (d) => unfreezeSubject(d, r.subject, deps.clock.now().toISOString()));
      const unfrozenAt = r.unfrozenAt ?? deps.clock.now().toISOString();
      const freezeMs = Date.parse(unfrozenAt) - Date.parse(r.frozenAt ?? unfrozenAt);
      const forgetAfter = new Date(Date.parse(unfrozenAt) + limits.retentionMs).toISOString();
      await audit(deps, r.id, 'unfrozen', { mappingVersion: version, freezeMs, forgetAfter });
      deps.progress?.(
        `${r.id}: ${describeSubject(r.subject)} now served by ${r.target}; frozen for ${freezeMs} ms; source copy kept until ${forgetAfter}`,
      );
      return save(deps, stored, {
        completed: 'unfrozen',
        status: 'retained',
        unfrozenAt,
        freezeMs,
        forgetAfter,
        mappingVersions: { ...r.mappingVersions, unfreeze: version },
      });
    }
    case 'forgotten': {
      const due = Date.parse(r.forgetAfter ?? '') <= deps.clock.now().getTime();
      if (!due && !options.forgetNow) return stored;
      const deleted = await source.forget(r.subject, r.id);
      await deps.handoff.remove(r.id);
      await audit(deps, r.id, 'forgotten', { sourceRowsDeleted: deleted, early: !due });
      return save(deps, stored, { completed: 'forgotten', status: 'finished', sourceRowsDeleted: deleted });
    }
    default:
      throw new MoveError(`step ${step} cannot be run`);
  }
}

export interface RunOptions {
  /** Delete the source copy without waiting for the retention. */
  readonly forgetNow?: boolean;
  /** Stop once this step is done (the CLI runs `forgotten` only through `move forget`). @default 'unfrozen' */
  readonly until?: MoveStep;
}

/**
 * Drives a move from its last completed step to `until` (default: unfrozen; the source copy is
 * then retained). Safe to run again after a crash at any point: every step is idempotent.
 */
export async function runMove(deps: MoverDeps, id: string, options: RunOptions = {}): Promise<MoveRecord> {
  const limiter = new RateLimiter(limitsOf(deps).copyRowsPerSecond, deps.clock);
  const until = options.until ?? 'unfrozen';
  const session: RunSession = {};
  let stored = await load(deps, id);
  if (stored.record.status === 'aborted' || stored.record.status === 'finished') return stored.record;
  await audit(deps, id, 'run', { from: stored.record.completed, until });
  while (stepIndex(stored.record.completed) < stepIndex(until)) {
    const step = STEPS[stepIndex(stored.record.completed) + 1];
    const before = stored;
    try {
      stored = await runStep(deps, stored, step, limiter, options, session);
    } catch (error) {
      const message = (error as Error).message;
      await audit(deps, id, 'step-failed', { step, error: message });
      const latest = await deps.store.read(id);
      if (latest) await save(deps, latest, { lastError: `${step}: ${message}` }).catch(() => undefined);
      throw error;
    }
    if (stored === before) break; // forget not due yet
    if (stored.record.lastError) stored = await save(deps, stored, { lastError: undefined });
    await audit(deps, id, `step:${step}`);
    await deps.afterStep?.(step, stored.record);
  }
  return stored.record;
}

/** Deletes the source copy once the retention has passed (or at once with `now`). */
export async function forgetMove(deps: MoverDeps, id: string, now = false): Promise<MoveRecord> {
  const { record } = await load(deps, id);
  if (record.status === 'active')
    throw new MoveError(`move ${id} is at ${record.completed}; finish it (\`cellctl move resume ${id}\`) before forgetting the source copy`);
  if (record.status !== 'retained') return record;
  if (!now && Date.parse(record.forgetAfter!) > deps.clock.now().getTime()) {
    throw new MoveError(`move ${id}: the source copy is kept until ${record.forgetAfter}; pass --now to delete it earlier`);
  }
  return runMove(deps, id, { until: 'forgotten', forgetNow: now });
}

/**
 * Undoes a move that has not flipped: the target's partial copy is deleted, the source's fence and
 * the routers' freeze lifted. After the flip, going back is a move in the other direction.
 */
export async function abortMove(deps: MoverDeps, id: string, reason = ''): Promise<MoveRecord> {
  let stored = await load(deps, id);
  const r = stored.record;
  if (r.status === 'aborted') return r;
  if (r.status !== 'active' || stepIndex(r.completed) >= stepIndex('flipped')) {
    throw new MoveError(`move ${id} has flipped (${r.completed}); to go back, move ${describeSubject(r.subject)} to ${r.source}`);
  }
  const doc = await deps.routing.read();
  if (currentCell(doc, r.subject) === r.target) {
    throw new MoveError(
      `move ${id}: mapping v${doc.version} already routes ${describeSubject(r.subject)} to ${r.target} (the mover stopped during the flip); run \`cellctl move resume ${id}\` to finish it`,
    );
  }
  await audit(deps, id, 'abort', { at: r.completed, reason });
  const deleted = await deps.cell(r.target).clear(r.subject);
  await deps.cell(r.source).unfence(id);
  const version = await publishIfChanged(deps, (d) => unfreezeSubject(d, r.subject, deps.clock.now().toISOString()));
  await deps.handoff.remove(id);
  stored = await save(deps, stored, { status: 'aborted', lastError: undefined });
  await audit(deps, id, 'aborted', { targetRowsDeleted: deleted, mappingVersion: version });
  return stored.record;
}
