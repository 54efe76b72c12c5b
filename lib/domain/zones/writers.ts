/**
 * Moving cells' database writers out of a drained zone, one cell at a time: the core, behind a port
 * per cell (`CellDatabase`), so the same steps run against AWS (lib/adapters/aws/writer-failover.ts)
 * and in tests. A run is safe to repeat: a cell whose writer is already elsewhere is left alone, so a
 * drain interrupted half-way is finished by running it again.
 */

/** One database instance as the cell's account reports it; `zone` is its AZ ID. */
export interface DatabaseMember {
  readonly id: string;
  readonly zone: string;
  readonly writer: boolean;
  readonly status: string;
}

/**
 * Where a cell's database runs. A cluster (Aurora): its instances, one of them the writer. A
 * Multi-AZ instance (RDS): one member, the primary, with its standby's zone.
 */
export type DatabaseState =
  | { readonly kind: 'cluster'; readonly id: string; readonly members: readonly DatabaseMember[]; readonly status?: string }
  | { readonly kind: 'instance'; readonly id: string; readonly members: readonly [DatabaseMember]; readonly standbyZone?: string };

/** One cell's database, as the failover sees it (zones as AZ IDs). */
export interface CellDatabase {
  describe(): Promise<DatabaseState>;
  /** Aurora: promote `target`. RDS: reboot with failover (the standby becomes the primary). */
  failover(state: DatabaseState, target?: string): Promise<void>;
  /** Releases its clients, once the cell is done. */
  close?(): void;
}

export type WriterOutcome =
  /** The writer was in the zone and now runs in `to`. */
  | { readonly cell: string; readonly kind: 'moved'; readonly from: string; readonly to: string; readonly ms: number }
  /** The writer was not in the zone: nothing done. */
  | { readonly cell: string; readonly kind: 'elsewhere'; readonly zone: string }
  /** The writer is in the zone with nowhere to go (no available reader, or no standby, outside it). */
  | { readonly cell: string; readonly kind: 'stuck'; readonly reason: string }
  /** The cell's database could not be read or failed over; `reason` says why. */
  | { readonly cell: string; readonly kind: 'failed'; readonly reason: string };

export interface WriterFailoverOptions {
  /** The AZ ID drained. */
  readonly zone: string;
  /** How long one cell's failover may take before the run stops. */
  readonly timeoutMs: number;
  /** Between two reads of a cell's database while it fails over. @default 5000 */
  readonly pollMs?: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Called with each cell's outcome as it is known. */
  readonly progress?: (outcome: WriterOutcome) => void;
}

/** The writer of `state`. */
export function writerOf(state: DatabaseState): DatabaseMember | undefined {
  return state.members.find((m) => m.writer);
}

/**
 * What to fail over to, or why nothing can: an available reader outside the zone (Aurora; the one
 * listed first), or the standby when its zone is another (RDS).
 */
export function failoverTarget(state: DatabaseState, zone: string): { readonly target?: string } | { readonly stuck: string } {
  if (state.kind === 'instance') {
    if (state.standbyZone === undefined) return { stuck: `${state.id} has no standby (not Multi-AZ): nowhere to fail over to` };
    if (state.standbyZone === zone) return { stuck: `${state.id}'s standby is in ${zone} too` };
    return {};
  }
  const reader = state.members.find((m) => !m.writer && m.zone !== zone && m.status === 'available');
  if (!reader) return { stuck: `${state.id} has no available reader outside ${zone} to promote; add one in another zone` };
  return { target: reader.id };
}

/**
 * Each cell in turn (the order given: the canary first), one at a time: a writer in `zone` is failed
 * over and waited for until the writer runs in another zone and is available; the next cell starts
 * only then. A cell that fails or times out stops the run (the cells after it are not touched),
 * since failing over the next cell while one is still moving would put two cells at risk at once.
 */
export async function failOverWriters(
  cells: readonly { readonly id: string; readonly database: CellDatabase }[],
  o: WriterFailoverOptions,
): Promise<WriterOutcome[]> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const outcomes: WriterOutcome[] = [];
  const report = (outcome: WriterOutcome) => {
    outcomes.push(outcome);
    o.progress?.(outcome);
    return outcome;
  };
  for (const cell of cells) {
    const started = now();
    let outcome: WriterOutcome;
    try {
      outcome = await failOverOne(cell.id, cell.database, o.zone, { deadline: started + o.timeoutMs, pollMs: o.pollMs ?? 5000, now, sleep });
    } catch (error) {
      outcome = { cell: cell.id, kind: 'failed', reason: (error as Error).message };
    } finally {
      cell.database.close?.();
    }
    report(outcome.kind === 'moved' ? { ...outcome, ms: now() - started } : outcome);
    if (outcome.kind === 'failed') break;
  }
  return outcomes;
}

async function failOverOne(
  cell: string,
  database: CellDatabase,
  zone: string,
  o: { deadline: number; pollMs: number; now: () => number; sleep: (ms: number) => Promise<void> },
): Promise<WriterOutcome> {
  const state = await database.describe();
  const writer = writerOf(state);
  if (!writer) return { cell, kind: 'failed', reason: `${state.id} reports no writer; look at it before draining its zone` };
  if (writer.zone !== zone) return { cell, kind: 'elsewhere', zone: writer.zone };
  // A failover already in progress (a run that timed out, run again): wait on it, never start a second
  // (RDS refuses one: InvalidDBClusterStateFault / InvalidDBInstanceStateFault).
  const busy = writer.status !== 'available' || (state.kind === 'cluster' && state.status !== undefined && state.status !== 'available');
  if (!busy) {
    const target = failoverTarget(state, zone);
    if ('stuck' in target) return { cell, kind: 'stuck', reason: target.stuck };
    await database.failover(state, target.target);
  }
  for (;;) {
    await o.sleep(o.pollMs);
    const after = await database.describe();
    const now = writerOf(after);
    // Done when the cluster is available again (it shows the new roles only then) and the writer is available elsewhere.
    const settled = after.kind !== 'cluster' || after.status === undefined || after.status === 'available';
    if (now && now.zone !== zone && now.status === 'available' && settled) return { cell, kind: 'moved', from: zone, to: now.zone, ms: 0 };
    if (o.now() >= o.deadline)
      return {
        cell,
        kind: 'failed',
        reason: `${state.id}: the writer is still ${now ? `in ${now.zone} (${now.status})` : 'not reported'} after the timeout; run the drain again to wait on it`,
      };
  }
}
