/**
 * Moving database writers out of a drained zone (lib/domain/zones/writers.ts), against databases
 * that behave as RDS reports them: a failover takes a few reads to show, an Aurora failover promotes
 * the target reader, a Multi-AZ reboot swaps primary and standby. Time is the test's own clock.
 */
import { CellDatabase, DatabaseMember, DatabaseState, failOverWriters, failoverTarget } from '../../../lib/domain/zones';

const ZONE = 'use1-az2';

/** A database that, after `failover`, answers "failing-over" `settle` times and then shows the new writer. */
class FakeDatabase implements CellDatabase {
  calls: string[] = [];
  closed = false;
  private pending = -1;
  constructor(
    private state: DatabaseState,
    private readonly settle = 2,
    private readonly neverFinishes = false,
  ) {}
  async describe(): Promise<DatabaseState> {
    this.calls.push('describe');
    if (this.pending > 0) {
      this.pending -= 1;
      return { ...this.state, members: this.state.members.map((m) => ({ ...m, status: 'failing-over' })) } as DatabaseState;
    }
    if (this.pending === 0 && !this.neverFinishes) {
      this.pending = -1;
      this.state = promoted(this.state, this.target);
    }
    return this.state;
  }
  private target?: string;
  async failover(_state: DatabaseState, target?: string): Promise<void> {
    this.calls.push(`failover ${target ?? ''}`.trim());
    this.target = target;
    this.pending = this.settle;
  }
  close(): void {
    this.closed = true;
  }
}

function promoted(state: DatabaseState, target?: string): DatabaseState {
  if (state.kind === 'instance') {
    const [primary] = state.members;
    return { ...state, members: [{ ...primary, zone: state.standbyZone! }], standbyZone: primary.zone };
  }
  return { ...state, members: state.members.map((m) => ({ ...m, writer: m.id === target })) };
}

const member = (id: string, zone: string, writer: boolean, status = 'available'): DatabaseMember => ({ id, zone, writer, status });
const aurora = (id: string, ...members: DatabaseMember[]): DatabaseState => ({ kind: 'cluster', id, members });
const rds = (id: string, zone: string, standbyZone?: string): DatabaseState => ({
  kind: 'instance',
  id,
  members: [member(id, zone, true)],
  ...(standbyZone ? { standbyZone } : {}),
});

function clock() {
  let t = 0;
  return { now: () => t, sleep: async (ms: number) => void (t += ms) };
}

it('fails over, one cell at a time, only the writers in the zone, and waits for each before the next', async () => {
  const canary = new FakeDatabase(aurora('canary-db', member('w', ZONE, true), member('r', 'use1-az1', false)));
  const elsewhere = new FakeDatabase(aurora('us-1-db', member('w', 'use1-az4', true), member('r', ZONE, false)));
  const small = new FakeDatabase(rds('us-4-db', ZONE, 'use1-az4'));
  const order: string[] = [];
  const outcomes = await failOverWriters(
    [
      { id: 'canary', database: canary },
      { id: 'us-1', database: elsewhere },
      { id: 'us-4', database: small },
    ],
    { zone: ZONE, timeoutMs: 600_000, pollMs: 5000, ...clock(), progress: (o) => order.push(o.cell) },
  );
  expect(outcomes).toEqual([
    { cell: 'canary', kind: 'moved', from: ZONE, to: 'use1-az1', ms: 15_000 },
    { cell: 'us-1', kind: 'elsewhere', zone: 'use1-az4' },
    { cell: 'us-4', kind: 'moved', from: ZONE, to: 'use1-az4', ms: 15_000 },
  ]);
  expect(order).toEqual(['canary', 'us-1', 'us-4']);
  expect(canary.calls).toEqual(['describe', 'failover r', 'describe', 'describe', 'describe']);
  expect(elsewhere.calls).toEqual(['describe']);
  expect(small.calls.filter((c) => c.startsWith('failover'))).toEqual(['failover']);
  expect([canary.closed, elsewhere.closed, small.closed]).toEqual([true, true, true]);
});

it('leaves a writer with nowhere to go, says why, and goes on to the next cell', async () => {
  expect(failoverTarget(aurora('a', member('w', ZONE, true), member('r', ZONE, false)), ZONE)).toEqual({
    stuck: `a has no available reader outside ${ZONE} to promote; add one in another zone`,
  });
  expect(failoverTarget(aurora('a', member('w', ZONE, true), member('r', 'use1-az1', false, 'rebooting')), ZONE)).toMatchObject({
    stuck: expect.any(String),
  });
  expect(failoverTarget(rds('b', ZONE), ZONE)).toEqual({ stuck: 'b has no standby (not Multi-AZ): nowhere to fail over to' });
  expect(failoverTarget(rds('b', ZONE, ZONE), ZONE)).toEqual({ stuck: `b's standby is in ${ZONE} too` });
  const next = new FakeDatabase(rds('c', ZONE, 'use1-az1'));
  const outcomes = await failOverWriters(
    [
      { id: 'one-zone', database: new FakeDatabase(aurora('a', member('w', ZONE, true), member('r', ZONE, false))) },
      { id: 'next', database: next },
    ],
    { zone: ZONE, timeoutMs: 600_000, pollMs: 1000, ...clock() },
  );
  expect(outcomes.map((o) => o.kind)).toEqual(['stuck', 'moved']);
});

it('stops the run at a cell whose failover does not finish in time, and a second run finishes it', async () => {
  const slow = new FakeDatabase(aurora('slow-db', member('w', ZONE, true), member('r', 'use1-az1', false)), 2, true);
  const after = new FakeDatabase(rds('after-db', ZONE, 'use1-az4'));
  const first = await failOverWriters(
    [
      { id: 'slow', database: slow },
      { id: 'after', database: after },
    ],
    { zone: ZONE, timeoutMs: 60_000, pollMs: 5000, ...clock() },
  );
  expect(first).toEqual([
    {
      cell: 'slow',
      kind: 'failed',
      reason: `slow-db: the writer is still in ${ZONE} (available) after the timeout; run the drain again to wait on it`,
    },
  ]);
  expect(after.calls).toEqual([]);
  // Run again once the cluster has finished: the moved cell is left alone, the next one is done.
  const done = new FakeDatabase(aurora('slow-db', member('w', ZONE, false), member('r', 'use1-az1', true)));
  const second = await failOverWriters(
    [
      { id: 'slow', database: done },
      { id: 'after', database: after },
    ],
    { zone: ZONE, timeoutMs: 60_000, pollMs: 5000, ...clock() },
  );
  expect(second.map((o) => o.kind)).toEqual(['elsewhere', 'moved']);
});

it('stops at a cell whose database cannot be read, naming why', async () => {
  const broken: CellDatabase = {
    describe: async () => {
      throw new Error('cannot assume arn:aws:iam::111111111111:role/orders-us-2-db-failover (AccessDenied: not deployed)');
    },
    failover: async () => undefined,
  };
  const untouched = new FakeDatabase(rds('x', ZONE, 'use1-az1'));
  const outcomes = await failOverWriters(
    [
      { id: 'us-2', database: broken },
      { id: 'us-3', database: untouched },
    ],
    { zone: ZONE, timeoutMs: 60_000, ...clock() },
  );
  expect(outcomes).toEqual([{ cell: 'us-2', kind: 'failed', reason: expect.stringContaining('orders-us-2-db-failover') }]);
  expect(untouched.calls).toEqual([]);
});

it('waits on a failover already in progress (a run that timed out, run again) instead of starting a second, and on the cluster to be available', async () => {
  const inProgress = new FakeDatabase(
    {
      ...aurora('busy-db', member('w', ZONE, true, 'available'), member('r', 'use1-az1', false, 'available')),
      status: 'failing-over',
    } as DatabaseState,
    0,
  );
  // The cluster finishes after two more reads: then it is available with the reader as writer.
  let reads = 0;
  const settling: CellDatabase = {
    describe: async () => {
      reads += 1;
      const state = await inProgress.describe();
      return reads < 3
        ? state
        : ({ ...aurora('busy-db', member('w', ZONE, false), member('r', 'use1-az1', true)), status: 'available' } as DatabaseState);
    },
    failover: (state, target) => inProgress.failover(state, target),
  };
  const outcomes = await failOverWriters([{ id: 'busy', database: settling }], { zone: ZONE, timeoutMs: 600_000, pollMs: 1000, ...clock() });
  expect(outcomes).toEqual([{ cell: 'busy', kind: 'moved', from: ZONE, to: 'use1-az1', ms: 2000 }]);
  expect(inProgress.calls.filter((c) => c.startsWith('failover'))).toEqual([]);
});
