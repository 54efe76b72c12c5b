import { describeSubject, subjectsOverlap } from '../../domain/moves/subject';
import { Clock, MoveError, MoveRecord, MoveSubject } from '../../domain/moves/types';

export interface MoveLimits {
  /** Rows per second one move may copy (export side). @default 20000 */
  readonly copyRowsPerSecond: number;
  /** Moves that may involve one cell (as source or target) at once. @default 2 */
  readonly concurrentMovesPerCell: number;
  /** Catch-up stops when a round copied fewer rows than this. @default 100 */
  readonly catchUpRows: number;
  /** Catch-up rounds before freezing anyway. @default 10 */
  readonly maxCatchUpRounds: number;
  /** How long the source copy is kept after the flip. @default 24 h */
  readonly retentionMs: number;
  /** Rows per export batch (file in the hand-off store). @default 5000 */
  readonly batchRows: number;
}

export const DEFAULT_LIMITS: MoveLimits = {
  copyRowsPerSecond: 20_000,
  concurrentMovesPerCell: 2,
  catchUpRows: 100,
  maxCatchUpRounds: 10,
  retentionMs: 24 * 3600_000,
  batchRows: 5000,
};

/**
 * Why a new move may not start now, given the moves in flight (`active` ones; a retained move is
 * finished for routing and limits). Empty when it may start.
 */
export function admissionProblems(
  candidate: { subject: MoveSubject; source: string; target: string; bucketCount: number },
  moves: readonly MoveRecord[],
  limits: Pick<MoveLimits, 'concurrentMovesPerCell'>,
): string[] {
  const active = moves.filter((m) => m.status === 'active');
  const problems: string[] = [];
  for (const m of active) {
    if (subjectsOverlap(candidate.subject, m.subject, candidate.bucketCount)) {
      problems.push(
        `${describeSubject(candidate.subject)} overlaps move ${m.id} (${describeSubject(m.subject)}, at ${m.completed}): one move per tenant at a time; finish or abort it first`,
      );
    }
  }
  for (const cell of [candidate.source, candidate.target]) {
    const busy = active.filter((m) => m.source === cell || m.target === cell);
    if (busy.length >= limits.concurrentMovesPerCell) {
      problems.push(
        `cell ${cell} is already in ${busy.length} moves (${busy.map((m) => m.id).join(', ')}); the limit is ${limits.concurrentMovesPerCell} per cell`,
      );
    }
  }
  return problems;
}

/** A token bucket over rows: `take(n)` waits (through the injected clock) until n rows are allowed. */
export class RateLimiter {
  private available: number;
  private last: number;

  constructor(
    private readonly perSecond: number,
    private readonly clock: Clock,
  ) {
    if (!(perSecond > 0)) throw new MoveError(`copy rate ${perSecond}: give rows per second > 0`);
    this.available = perSecond;
    this.last = clock.now().getTime();
  }

  public async take(rows: number): Promise<void> {
    const now = this.clock.now().getTime();
    this.available = Math.min(this.perSecond, this.available + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    this.available -= rows;
    if (this.available < 0) await this.clock.sleep(Math.ceil((-this.available / this.perSecond) * 1000));
  }
}
