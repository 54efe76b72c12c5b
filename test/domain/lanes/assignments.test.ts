import { assign, EMPTY_ASSIGNMENTS, extendShards, parseAssignments, parseShard, shardsInUse, tenantShard } from '../../../lib/domain/lanes';

describe('lane assignments', () => {
  const settings = { count: 16, perTenant: 4, maxOverlap: 2 };
  // Twelve lanes' shards in use: lanes 13-16 leave room for shards no default shard is.
  const shards = extendShards({ ...settings, count: 12 });
  const now = new Date('2026-12-03T10:00:00Z');

  it('puts a tenant on a shard in use, and back on its default one', () => {
    const doc = assign(settings, shards, EMPTY_ASSIGNMENTS, 'acme', [1, 2, 3, 4], { now });
    expect(tenantShard('acme', shards, doc)).toEqual({ tenant: 'acme', lanes: [1, 2, 3, 4], source: 'assigned' });
    const back = assign(settings, shards, doc, 'acme', undefined);
    expect(back.assignments).toEqual({});
    expect(tenantShard('acme', shards, back).source).toBe('default');
  });

  it('refuses a new shard that shares more than maxOverlap lanes with a shard in use, naming it', () => {
    expect(() => assign(settings, shards, EMPTY_ASSIGNMENTS, 'acme', [1, 2, 3, 13])).toThrow(
      /^shard 1-2-3-13 shares 3 lanes with shard 1-2-3-4 in use; router.lanes.maxOverlap is 2\./,
    );
  });

  it('dedicates a new shard to one tenant; nobody else may have it, and a shard in use cannot be dedicated', () => {
    const doc = assign(settings, shards, EMPTY_ASSIGNMENTS, 'big', [13, 14, 15, 16], { dedicated: true, now });
    expect(tenantShard('big', shards, doc).source).toBe('dedicated');
    expect(() => assign(settings, shards, doc, 'other', [13, 14, 15, 16])).toThrow('shard 13-14-15-16 is dedicated to tenant `big`');
    expect(() => assign(settings, shards, doc, 'other', [1, 2, 3, 4], { dedicated: true })).toThrow(
      'shard 1-2-3-4 cannot be dedicated to `other`: it is a default shard other tenants hash to',
    );
    // A new shard must keep the bound with the dedicated one too.
    expect(() => assign(settings, shards, doc, 'other', [1, 14, 15, 16])).toThrow(/shares 3 lanes with shard 13-14-15-16/);
    expect(shardsInUse(shards, doc).map((s) => s.join('-'))).toContain('13-14-15-16');
  });

  it('refuses a malformed shard or tenant, and checks a stored document on read', () => {
    expect(() => assign(settings, shards, EMPTY_ASSIGNMENTS, 'acme', [1, 2, 3])).toThrow('shard 1-2-3: shard[0] (1-2-3) has 3 lanes; perTenant is 4');
    expect(() => assign(settings, shards, EMPTY_ASSIGNMENTS, 'bad key!', [1, 2, 3, 4])).toThrow(/^tenant `bad key!`: /);
    expect(() => parseShard('1-x')).toThrow('shard `1-x` must be lane numbers joined by - or , (for example 1-4)');
    expect(parseShard('4,1')).toEqual([1, 4]);
    const broken = JSON.stringify({
      schemaVersion: 1,
      assignments: { a: { lanes: [13, 14, 15, 16], at: '' }, b: { lanes: [1, 13, 14, 15], at: '' } },
    });
    expect(() => parseAssignments(broken, settings, shards)).toThrow(/share 3 lanes; maxOverlap is 2/);
    expect(() => parseAssignments('{', settings, shards)).toThrow(/is not JSON/);
  });
});
