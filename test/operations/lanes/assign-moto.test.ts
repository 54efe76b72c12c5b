import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { MappingStore } from '../../../lib/adapters/mapping-store';
import { ASSIGNMENTS_KEY, extendShards, shardId, shardSetProblems, shardsInUse } from '../../../lib/domain/lanes';
import { assignTenant, readAssignments } from '../../../lib/operations/lanes';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mappingBucketParameter } from '../../../lib/domain/names';
import { cellctlIn } from '../../support/cli';
import { configDirs } from '../../support/fleet';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

/**
 * Lane assignments against moto's S3, which enforces If-Match and If-None-Match (412): concurrent
 * `cellctl lanes assign` calls each check the overlap bound against the document they read, and only
 * a write whose ETag still holds lands, so the bound holds whatever the interleaving.
 */
describe('lane assignments against moto (conditional writes)', () => {
  const settings = { count: 16, perTenant: 4, maxOverlap: 2 };
  // Defaults over lanes 1-12 only, so shards through lanes 13-16 are free to assign.
  const shards = extendShards({ ...settings, count: 12 });
  let moto: Moto;
  let s3: S3Client;
  beforeAll(async () => {
    moto = await startMoto();
    s3 = new S3Client({ ...motoClientConfig(moto, 'eu-west-1'), forcePathStyle: true });
  });
  afterAll(async () => {
    s3?.destroy();
    await moto?.stop();
  });
  beforeEach(async () => {
    await moto.reset();
    await s3.send(new CreateBucketCommand({ Bucket: 'mappings', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
  });

  it('20 concurrent assignments of clashing new shards never break the overlap bound', async () => {
    const store = new MappingStore(s3, 'mappings');
    // {x, y, 13, 14} for the 20 pairs of x in 1-5 and y in 7-10: two with a common x or y share 3
    // lanes, so at most 4 of them (a matching) can be in use together, and at least 16 are refused.
    const wanted = Array.from({ length: 20 }, (_, i) => [(i % 5) + 1, (Math.floor(i / 5) % 4) + 7, 13, 14]);
    const results = await Promise.allSettled(wanted.map((lanes, i) => assignTenant(store, settings, shards, `tenant-${i}`, lanes)));
    const accepted = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    const { document } = await readAssignments(store, settings, shards);
    expect(shardSetProblems(settings, shardsInUse(shards, document))).toEqual([]);
    expect(Object.keys(document.assignments)).toHaveLength(accepted.length);
    // The race happened: writes lost to concurrent ones and were checked again against the newer document.
    expect(accepted.some((r) => r.value.conflicts > 0)).toBe(true);
    expect(accepted.length).toBeGreaterThan(0);
    expect(accepted.length).toBeLessThanOrEqual(4);
    for (const r of refused) expect((r.reason as Error).message).toMatch(/shares 3 lanes with shard [0-9-]+ in use; router.lanes.maxOverlap is 2/);
    // Every accepted tenant is on the shard it asked for.
    for (const [tenant, a] of Object.entries(document.assignments)) expect(shardId(a.lanes)).toBe(shardId(wanted[Number(tenant.split('-')[1])]));
  });

  it('a write without the ETag it read is refused by S3, and a stored document that breaks the bound is refused on read', async () => {
    const store = new MappingStore(s3, 'mappings');
    await assignTenant(store, settings, shards, 'a', [1, 7, 13, 14]);
    const raw = await store.readRaw(ASSIGNMENTS_KEY);
    // An ETag is the content's MD5 here: the second write must change the text to change it.
    await store.put(ASSIGNMENTS_KEY, `${raw!.text} `, raw!.etag);
    await expect(store.put(ASSIGNMENTS_KEY, raw!.text, raw!.etag)).rejects.toThrow(/changed while we were writing it/);
    await s3.send(
      new PutObjectCommand({
        Bucket: 'mappings',
        Key: ASSIGNMENTS_KEY,
        Body: JSON.stringify({ schemaVersion: 1, assignments: { a: { lanes: [1, 7, 13, 14], at: '' }, b: { lanes: [1, 8, 13, 14], at: '' } } }),
      }),
    );
    await expect(assignTenant(store, settings, shards, 'c', [2, 8, 15, 16])).rejects.toThrow(
      /lanes\/assignments.json is invalid:\n {2}- .*share 3 lanes/,
    );
  });

  describe('cellctl lanes assign and where, as an operator runs them', () => {
    const dirs = configDirs();
    const saved: Record<string, string | undefined> = {};
    let dir: string;
    beforeAll(async () => {
      const env = {
        AWS_ENDPOINT_URL: moto.endpoint,
        AWS_ACCESS_KEY_ID: 'testing',
        AWS_SECRET_ACCESS_KEY: 'testing',
        AWS_PROFILE: undefined,
        AWS_SESSION_TOKEN: undefined,
      };
      for (const [k, v] of Object.entries(env)) {
        saved[k] = process.env[k];
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      dir = dirs.config((t) =>
        t.replace(/groups: \[\n\s*\{ name: 'canary', tasks: 2 \},\n\s*\{ name: 'main', tasks: 6 \},\n\s*\],/, 'lanes: { count: 8, perTenant: 2 },'),
      );
      expect((await cellctlIn(dir, 'lanes', 'init')).code).toBe(0);
    });
    afterAll(() => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });

    it('finds the home bucket through its SSM parameter, assigns, and where says so; a dedicated default shard is refused', async () => {
      const ssm = new SSMClient(motoClientConfig(moto, 'eu-west-1'));
      await ssm.send(new PutParameterCommand({ Name: mappingBucketParameter('orders'), Value: 'mappings', Type: 'String' }));
      ssm.destroy();
      const before = await cellctlIn(dir, 'lanes', 'where', 'acme', '--force-path-style', '--json');
      expect(before).toMatchObject({ code: 0 });
      expect(JSON.parse(before.out)).toMatchObject({ tenant: 'acme', source: 'default' });
      const assigned = await cellctlIn(dir, 'lanes', 'assign', 'acme', '--shard', '7-8', '--force-path-style', '--json');
      expect(assigned).toMatchObject({ code: 0 });
      expect(JSON.parse(assigned.out)).toMatchObject({ shard: '7-8', source: 'assigned', conflicts: 0 });
      // Lane 7's stack is deployed in eu-west-1 (its NLB's name in SSM), lane 8's not yet.
      const euSsm = new SSMClient(motoClientConfig(moto, 'eu-west-1'));
      await euSsm.send(new PutParameterCommand({ Name: '/orders/router/lanes/7/dns-name', Value: 'lane-7-eu.elb.example', Type: 'String' }));
      euSsm.destroy();
      const after = await cellctlIn(dir, 'lanes', 'where', 'acme', '--force-path-style', '--json');
      expect(JSON.parse(after.out)).toMatchObject({ shard: '7-8', lanes: [7, 8], source: 'assigned' });
      const regions = JSON.parse(after.out).regions as { region: string; lanes: { lane: number; dnsName?: string }[] }[];
      expect(regions.map((r) => r.region)).toEqual(['eu-west-1', 'us-east-1']);
      expect(regions[0].lanes).toEqual([
        { lane: 7, dnsName: 'lane-7-eu.elb.example', parameter: '/orders/router/lanes/7/dns-name' },
        { lane: 8, parameter: '/orders/router/lanes/8/dns-name' },
      ]);
      const table = await cellctlIn(dir, 'lanes', 'where', 'acme', '--force-path-style');
      expect(table.out).toContain('7: lane-7-eu.elb.example, 8: not deployed (/orders/router/lanes/8/dns-name)');
      const refused = await cellctlIn(dir, 'lanes', 'assign', 'other', '--shard', '1-2', '--dedicated', '--force-path-style');
      expect(refused).toMatchObject({
        code: 1,
        err: 'error: shard 1-2 cannot be dedicated to `other`: it is a default shard other tenants hash to; choose lanes no shard in use has\n',
      });
      const usage = await cellctlIn(dir, 'lanes', 'assign', 'other', '--force-path-style');
      expect(usage).toMatchObject({ code: 2, err: 'error: give exactly one of --shard LANES or --default\n' });
    });
  });
});
