import { HandoffLane, MoverOp, MoverRequest } from '../../domain/names/move-bucket';
import { ContractGap } from './schema-contract';
import { CellData, DeltaManifest, FenceState, MovedAwayRecord, RowHashes } from './cell-data';
import { HandoffStore } from './handoff';
import { RateLimiter } from './limits';
import { MoveSubject, TableChecksums, TableCounts } from '../../domain/moves/types';
import type { Homes } from '../../domain/mapping/types';

/** Runs one request as a cell's mover task and returns its answer (a refusal is a MoveError). */
export interface MoverTaskRunner {
  run(request: MoverRequest): Promise<unknown>;
}

export interface EcsCellDataOptions {
  readonly runner: MoverTaskRunner;
  readonly bucketCount: number;
  readonly batchRows: number;
  /** Rows per second the export may copy (the limit is applied inside the source's task). */
  readonly copyRowsPerSecond?: number;
  /** The lane (source and target account) of a move, from its record. */
  readonly laneOf: (moveId: string) => Promise<HandoffLane>;
}

/**
 * A cell of the AWS fleet as the mover engine sees it: every call runs inside the cell, as one
 * mover task (lib/operations/moves/aws-task.ts) with the cell's own database credentials; data crosses only
 * through the move bucket's hand-off lanes. The engine (lib/operations/moves/mover.ts) is the same as for
 * the local fleet; only this and the stores differ. The engine's hand-off store and rate limiter
 * are not used here: the tasks open the hand-off in the move bucket themselves, and the copy rate
 * is enforced by the exporting task.
 */
export class EcsCellData implements CellData {
  constructor(
    public readonly cell: string,
    private readonly o: EcsCellDataOptions,
  ) {}

  private async call<T>(op: MoverOp, args: Record<string, unknown>, lane?: HandoffLane): Promise<T> {
    const request: MoverRequest = {
      op,
      args,
      cell: this.cell,
      bucketCount: this.o.bucketCount,
      batchRows: this.o.batchRows,
      ...(lane ? { lane } : {}),
      ...(op === 'exportDelta' && this.o.copyRowsPerSecond ? { copyRowsPerSecond: this.o.copyRowsPerSecond } : {}),
    };
    return (await this.o.runner.run(request)) as T;
  }

  /** `<moveId>/<delta>`: the hand-off prefix the engine passes names its move. */
  private async lane(prefix: string): Promise<HandoffLane> {
    return this.o.laneOf(prefix.split('/')[0]);
  }

  public schemaVersion(): Promise<number> {
    return this.call('schemaVersion', {});
  }

  public async adoptHomes(homes: Homes): Promise<void> {
    await this.call('adoptHomes', { homes });
  }

  /** Read inside the cell by its mover task: the database is reachable only from there. */
  public contractGaps(): Promise<ContractGap[]> {
    return this.call('contractGaps', {});
  }

  public async exportDelta(
    subject: MoveSubject,
    since: string,
    _handoff: HandoffStore,
    prefix: string,
    _limiter?: RateLimiter,
  ): Promise<DeltaManifest> {
    return this.call('exportDelta', { subject, since, prefix }, await this.lane(prefix));
  }

  public async importDelta(subject: MoveSubject, _handoff: HandoffStore, prefix: string, manifest: DeltaManifest): Promise<TableCounts> {
    return this.call('importDelta', { subject, prefix, manifest }, await this.lane(prefix));
  }

  public clear(subject: MoveSubject): Promise<number> {
    return this.call('clear', { subject });
  }

  public checksums(subject: MoveSubject): Promise<TableChecksums> {
    return this.call('checksums', { subject });
  }

  public async fence(subject: MoveSubject, moveId: string, movedTo: string, state: FenceState = 'moved'): Promise<void> {
    await this.call('fence', { subject, moveId, movedTo, state });
  }

  public async unfence(moveId: string): Promise<void> {
    await this.call('unfence', { moveId });
  }

  public clearMovedAway(subject: MoveSubject): Promise<number> {
    return this.call('clearMovedAway', { subject });
  }

  public blockingRecords(subject: MoveSubject): Promise<MovedAwayRecord[]> {
    return this.call('blockingRecords', { subject });
  }

  public forget(subject: MoveSubject, moveId: string): Promise<number> {
    return this.call('forget', { subject, moveId });
  }

  /** The incremental verify's row hashes (one task per side and call, like every call). */
  public rowHashes(subject: MoveSubject, since: string): Promise<RowHashes> {
    return this.call('rowHashes', { subject, since });
  }

  /** The subject's work-queue messages, carried through the hand-off like a delta. */
  public async exportQueue(subject: MoveSubject, _handoff: HandoffStore, prefix: string): Promise<number> {
    return this.call('exportQueue', { subject, prefix }, await this.lane(prefix));
  }

  public async importQueue(subject: MoveSubject, _handoff: HandoffStore, prefix: string): Promise<number> {
    return this.call('importQueue', { subject, prefix }, await this.lane(prefix));
  }

  /** The subject's pending work re-sent to this cell's SQS queue, by its mover task (after the flip). */
  public requeue(subject: MoveSubject): Promise<number> {
    return this.call('requeue', { subject });
  }

  public async close(): Promise<void> {
    // Nothing is held between calls: each call is a task of its own.
  }
}
