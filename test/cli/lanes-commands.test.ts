import * as fs from 'fs';
import * as path from 'path';
import { loadFleet } from '../../lib/domain/fleet';
import { tenantShard } from '../../lib/domain/lanes';
import { cellctl, cellctlIn } from '../support/cli';
import { configDirs } from '../support/fleet';

const withLanes = (lanes: string) => (text: string) =>
  text.replace(/groups: \[\n\s*\{ name: 'canary', tasks: 2 \},\n\s*\{ name: 'main', tasks: 6 \},\n\s*\],/, `lanes: ${lanes},`);

describe('cellctl lanes plan', () => {
  it('8 lanes, 2 per tenant: 28 shards, largest overlap 1, a failed shard fully affects 1/28, a failed lane nobody', async () => {
    const { code, out } = await cellctl('lanes', 'plan', '--lanes', '8', '--per-tenant', '2');
    expect(code).toBe(0);
    expect(out).toContain('shards                 28\n');
    expect(out).toContain('largest overlap        1\n');
    expect(out).toContain('one lane fails         0 of tenants fully affected; 25.00% retry on another lane\n');
    expect(out).toContain('one shard fails        1/28 (3.57%) of tenants fully affected');
  });

  it('16 lanes, 4 per tenant, overlap at most 2: the shard count it reaches and the bound, as JSON', async () => {
    const { code, out } = await cellctl('lanes', 'plan', '--lanes', '16', '--per-tenant', '4', '--max-overlap', '2', '--json');
    expect(code).toBe(0);
    const plan = JSON.parse(out) as { shardCount: number; largestOverlap: number; oneShardFullyAffected: number; shards: number[][] };
    expect(plan.shardCount).toBe(140);
    expect(plan.largestOverlap).toBe(2);
    expect(plan.oneShardFullyAffected).toBeCloseTo(1 / 140, 10);
    expect(plan.shards[0]).toEqual([1, 2, 3, 4]);
  });

  it('refuses settings without a shard, naming the flag (exit 2)', async () => {
    const { code, err } = await cellctl('lanes', 'plan', '--lanes', '4', '--per-tenant', '2', '--max-overlap', '2');
    expect(code).toBe(2);
    expect(err).toBe('error: --max-overlap (2) must be below --per-tenant (2): shards sharing every lane are one shard; use 1 or less\n');
  });
});

describe('cellctl lanes init and the fleet with lanes', () => {
  const dirs = configDirs();

  it('the fleet refuses router.lanes without cells.lanes.json; init writes it; the fleet then has one group per lane', async () => {
    const dir = dirs.config(withLanes('{ count: 8, perTenant: 2 }'));
    expect(() => loadFleet(path.join(dir, 'cells.config.ts'))).toThrow(
      /router.lanes is set but .*cells.lanes.json is missing: run `cellctl lanes init`/,
    );
    const init = await cellctlIn(dir, 'lanes', 'init');
    expect(init).toMatchObject({ code: 0, out: expect.stringContaining('wrote cells.lanes.json: 28 shards; commit it') });
    const fleet = loadFleet(path.join(dir, 'cells.config.ts'));
    expect(fleet.router.groups.map((g) => g.name)).toEqual(['lane-1', 'lane-2', 'lane-3', 'lane-4', 'lane-5', 'lane-6', 'lane-7', 'lane-8']);
    // One task per zone by default: every lane survives a zone.
    expect(fleet.router.groups.every((g) => g.tasks === 3)).toBe(true);
    expect(fleet.router.lanes).toMatchObject({ count: 8, perTenant: 2, maxOverlap: 1 });
    expect(fleet.router.lanes!.shards).toHaveLength(28);
    expect((await cellctlIn(dir, 'lanes', 'init')).out).toContain('cells.lanes.json already fits router.lanes: 28 shards');
    const plan = await cellctlIn(dir, 'lanes', 'plan');
    expect(plan.out).toContain('8 lanes, 2 per tenant, overlap at most 1 (cells.lanes.json)');
  });

  it('adding lanes: the fleet asks for init, which keeps every stored shard and moves only the tenants new shards win', async () => {
    const eight = dirs.config(withLanes('{ count: 8, perTenant: 2 }'));
    await cellctlIn(eight, 'lanes', 'init');
    const before = loadFleet(path.join(eight, 'cells.config.ts')).router.lanes!.shards;
    // The same fleet with two more lanes (a new folder: a loaded config stays loaded in this process).
    const ten = dirs.config(withLanes('{ count: 10, perTenant: 2 }'));
    fs.copyFileSync(path.join(eight, 'cells.lanes.json'), path.join(ten, 'cells.lanes.json'));
    const file = path.join(ten, 'cells.config.ts');
    expect(() => loadFleet(file)).toThrow(
      /cells.lanes.json holds 8 lanes, 2 per tenant, overlap 1; router.lanes says 10, 2, 1: run `cellctl lanes init`/,
    );
    const init = await cellctlIn(ten, 'lanes', 'init');
    expect(init.out).toContain('extended cells.lanes.json: 17 shards added for the new lanes, 28 kept');
    const after = loadFleet(file).router.lanes!.shards;
    expect(after.slice(0, 28)).toEqual(before);
    for (let i = 0; i < 500; i++) {
      const moved = tenantShard(`t-${i}`, after).lanes;
      if (moved.join() !== tenantShard(`t-${i}`, before).lanes.join()) expect(moved.some((l) => l > 8)).toBe(true);
    }
  });

  it('refuses lanes beside groups, bad lane settings and a broken lanes file, one line each', async () => {
    const both = dirs.config((t) => t.replace('publishBakeSeconds: 300,', 'publishBakeSeconds: 300, lanes: { count: 8, perTenant: 2 },'));
    expect(() => loadFleet(path.join(both, 'cells.config.ts'))).toThrow(/router.groups and router.lanes are both set: lanes replace groups/);
    const bad = dirs.config(withLanes("{ count: 8, perTenant: 2, tasksPerLane: 2, hostedZone: { id: 'nope', name: 'Lanes.Example.com.' } }"));
    expect(() => loadFleet(path.join(bad, 'cells.config.ts'))).toThrow(
      /router.lanes.tasksPerLane: 2 must be an integer from 3 \(one task per zone of the region with most zones\) to 100\n.*router.lanes.hostedZone.id: `nope` is not a Route 53 hosted zone id.*\n.*router.lanes.hostedZone.name: `Lanes.Example.com.` must be the zone's domain name/,
    );
    const broken = dirs.config(withLanes('{ count: 8, perTenant: 2 }'));
    fs.writeFileSync(path.join(broken, 'cells.lanes.json'), '{"schemaVersion": 1,');
    expect(() => loadFleet(path.join(broken, 'cells.config.ts'))).toThrow(/cells.lanes.json: not valid JSON .*; restore it from version control/);
  });
});
