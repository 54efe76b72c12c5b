/**
 * Names shared by the AWS side of moves: the stacks that create the move bucket, the mover task and
 * its roles, the IAM policies that scope them, and the CLI and mover task that use them. Pure (no
 * CDK, no SDK), so the CLI can load it cheaply.
 *
 * The move bucket (one per fleet, in the router account and the fleet's `router.homeRegion`, next to the
 * mapping publisher) holds:
 *   moves/<moveId>/move.json, moves/<moveId>/audit/…   move records and audit log (S3MoveStore)
 *   handoff/<moveId>/from=<source account>/to=<target account>/<delta>/<table>/rows-N.json
 *                                                      the data a move hands from one cell to the other
 *   tasks/<cell account>/<request id>/request.json     what one mover task is asked to do (operator writes)
 *   tasks/<cell account>/<request id>/result.json      what it answered (the cell's mover writes)
 * Cells are told apart by their account (every cell has its own, and an account id cannot be
 * claimed by another account), so one bucket-policy statement with the `${aws:PrincipalAccount}`
 * policy variable scopes every cell to its own lanes, however many cells the fleet has.
 */

export const MOVE_RECORDS_PREFIX = 'moves/';
export const HANDOFF_PREFIX = 'handoff/';
export const TASKS_PREFIX = 'tasks/';

/** Source and target account of one move: where its hand-off data lives. */
export interface HandoffLane {
  readonly sourceAccount: string;
  readonly targetAccount: string;
}

const ACCOUNT = /^\d{12}$/;

function checkAccount(account: string): void {
  if (!ACCOUNT.test(account)) throw new Error(`\`${account}\` is not a 12-digit AWS account id`);
}

/**
 * `handoff/<moveId>/from=<source>/to=<target>/`. The `=` never appears in the rest of a key (the
 * hand-off store refuses it), so the bucket policy's `handoff/*\/from=<account>/*` and
 * `handoff/*\/to=<account>/*` cannot match a key of another lane.
 */
export function handoffLanePrefix(moveId: string, lane: HandoffLane): string {
  checkAccount(lane.sourceAccount);
  checkAccount(lane.targetAccount);
  return `${HANDOFF_PREFIX}${moveId}/from=${lane.sourceAccount}/to=${lane.targetAccount}/`;
}

export const taskRequestKey = (account: string, requestId: string) => `${TASKS_PREFIX}${account}/${requestId}/request.json`;
export const taskResultKey = (account: string, requestId: string) => `${TASKS_PREFIX}${account}/${requestId}/result.json`;

/** What the cell stack publishes in `moverParameter`, for `cellctl move` to run the task. */
export interface MoverTaskInfo {
  readonly cluster: string;
  /** Task definition family: RunTask takes the latest ACTIVE revision. */
  readonly taskDefinition: string;
  readonly container: string;
  readonly subnets: readonly string[];
  readonly securityGroups: readonly string[];
}

export const MOVER_CONTAINER = 'Mover';

/** What the operator asks one mover task to do: one CellData call. */
export interface MoverRequest {
  readonly op: MoverOp;
  /** Arguments of the CellData call, as JSON. */
  readonly args: Record<string, unknown>;
  readonly cell: string;
  readonly bucketCount: number;
  readonly batchRows: number;
  /** For exportDelta / importDelta: the lane of the move's hand-off data. */
  readonly lane?: HandoffLane;
  readonly copyRowsPerSecond?: number;
}

export const MOVER_OPS = [
  'schemaVersion',
  'adoptHomes',
  'exportDelta',
  'importDelta',
  'clear',
  'checksums',
  'fence',
  'unfence',
  'clearMovedAway',
  'blockingRecords',
  'forget',
  'rowHashes',
  'exportQueue',
  'importQueue',
  'requeue',
  'contractGaps',
] as const;
export type MoverOp = (typeof MOVER_OPS)[number];

/** What the task writes back. `moveError` marks a refusal the operator can act on (exit 1), not a crash. */
export type MoverResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: string; readonly moveError: boolean };
