import { convertToHomes, initialMapping, lookup } from '../../../lib/domain/mapping';
import { MoverDeps, planMove } from '../../../lib/operations/moves';

const NOW = '2026-12-06T06:00:00.000Z';

/**
 * A bucket move of a mapping with home tables is refused before anything is read or written: a
 * cell's fence and its row selection know a tenant's hash bucket, not its home table, so the move
 * would also take the other tables' tenants of the same hash. A tenant move is not refused.
 */
describe('moves and home tables', () => {
  const today = initialMapping(
    ['us-1', 'eu-1'].map((id) => ({ id, endpoint: `http://${id}.cells.internal`, state: 'active' as const })),
    1024,
    { now: NOW },
  );
  const homes = convertToHomes(
    today,
    {
      tables: [
        { regions: ['us-east-1'], prefixes: [] },
        { regions: ['eu-west-1'], prefixes: ['eu-'] },
      ],
    },
    (id) => (id.startsWith('eu') ? 'eu-west-1' : 'us-east-1'),
    { now: NOW },
  );
  const touched: string[] = [];
  const deps = (doc: typeof today) =>
    ({
      routing: { read: async () => doc },
      cell: (id: string) => {
        touched.push(id);
        throw new Error(`cell ${id} opened`);
      },
    }) as unknown as MoverDeps;

  it('refuses a bucket move, naming what to do instead, and opens no cell', async () => {
    await expect(planMove(deps(homes), { subject: { kind: 'buckets', ranges: [{ from: 1030, to: 1040 }] }, target: 'eu-1' })).rejects.toThrow(
      /2 home tables, and moving buckets with their data is not built for home tables yet; move the tenants one by one/,
    );
    expect(touched).toEqual([]);
  });

  it('lets a tenant move, and a bucket move of a one-table mapping, go on to the cells', async () => {
    const elsewhere = lookup(homes, 'eu-acme').cell === 'us-1' ? 'eu-1' : 'us-1';
    await expect(planMove(deps(homes), { subject: { kind: 'tenant', tenant: 'eu-acme' }, target: elsewhere })).rejects.toThrow(
      /cell (eu|us)-1 opened/,
    );
    await expect(planMove(deps(today), { subject: { kind: 'buckets', ranges: [{ from: 0, to: 3 }] }, target: 'eu-1' })).rejects.toThrow(/opened/);
  });
});
