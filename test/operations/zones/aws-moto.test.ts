import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { MappingStore, zonesKey } from '../../../lib/adapters/mapping-store';
import { parseZones } from '../../../lib/domain/zones';
import { changeAwsZone, readAwsZones, waitZonesCarried, zonesCarried } from '../../../lib/operations/zones';
import { S3ServedReporter } from '../../../lib/runtime/router';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

/**
 * The zones document and the routers' reports of it in moto's S3, which enforces If-Match and
 * If-None-Match (412): concurrent `cellctl zone` changes each land on the document they read, none
 * overwrites another, and `zone drain` waits for the reports the agents write (S3ServedReporter).
 */
describe('zones document and its reports against moto (conditional writes)', () => {
  const ZONES = ['use1-az1', 'use1-az2', 'use1-az4'];
  let moto: Moto;
  let s3: S3Client;
  let store: MappingStore;
  beforeAll(async () => {
    moto = await startMoto();
    s3 = new S3Client({ ...motoClientConfig(moto, 'us-east-1'), forcePathStyle: true });
  });
  afterAll(async () => {
    s3?.destroy();
    await moto?.stop();
  });
  beforeEach(async () => {
    await moto.reset();
    await s3.send(new CreateBucketCommand({ Bucket: 'mappings' }));
    store = new MappingStore(s3, 'mappings');
  });

  const stored = async () => {
    const text = await (await s3.send(new GetObjectCommand({ Bucket: 'mappings', Key: zonesKey('us-east-1') }))).Body!.transformToString();
    const parsed = parseZones(text, { region: 'us-east-1', knownZones: ZONES });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    return parsed.document;
  };

  it('lands every one of concurrent changes to different zones, each on the document before it, none lost', async () => {
    const changes = [
      ['use1-az1', 40],
      ['use1-az2', 0],
      ['use1-az4', 70],
      ['use1-az1', 50],
      ['use1-az4', 80],
    ] as const;
    const results = await Promise.all(
      changes.map(([zone, weight]) => changeAwsZone({ store, region: 'us-east-1', zones: ZONES, zone, weight, reason: `${zone} ${weight}` })),
    );
    const doc = await stored();
    // The first write created the document (version 2 over the implicit 1); each later one raised it by one.
    expect(doc.version).toBe(1 + changes.length);
    expect(new Set(results.map((r) => r.after.version)).size).toBe(changes.length);
    // The race happened: some writes lost and were made again on the newer document.
    expect(results.some((r) => r.conflicts > 0)).toBe(true);
    // Each zone holds the weight of its latest change in version order.
    const last = (zone: string) =>
      results.filter((_, i) => changes[i][0] === zone).sort((a, b) => b.after.version - a.after.version)[0].after.zones[zone].weight;
    for (const zone of ZONES) expect(doc.zones[zone].weight).toBe(last(zone));
    expect(doc.zones['use1-az2']).toMatchObject({ weight: 0, reason: 'use1-az2 0' });
  });

  it('refuses a change on a stored document that is not valid, and writes nothing over it', async () => {
    await s3.send(
      new PutObjectCommand({ Bucket: 'mappings', Key: zonesKey('us-east-1'), Body: '{"schemaVersion":1,"zones":{"us-east-1a":{"weight":0}}}' }),
    );
    await expect(changeAwsZone({ store, region: 'us-east-1', zones: ZONES, zone: 'use1-az2', weight: 0 })).rejects.toThrow(
      /not a valid zones document .* restore an earlier object version/,
    );
    const text = await (await s3.send(new GetObjectCommand({ Bucket: 'mappings', Key: zonesKey('us-east-1') }))).Body!.transformToString();
    expect(text).toContain('us-east-1a');
  });

  it('refuses draining the last zone serving, and writes nothing', async () => {
    await changeAwsZone({ store, region: 'us-east-1', zones: ZONES, zone: 'use1-az1', weight: 0 });
    await changeAwsZone({ store, region: 'us-east-1', zones: ZONES, zone: 'use1-az2', weight: 0 });
    await expect(changeAwsZone({ store, region: 'us-east-1', zones: ZONES, zone: 'use1-az4', weight: 0 })).rejects.toThrow(/every zone is drained/);
    expect((await readAwsZones(store, 'us-east-1', ZONES)).document.version).toBe(3);
  });

  it('waits until every fresh router task reports the zones version, naming the ones behind until then', async () => {
    const a = new S3ServedReporter(s3, 'mappings', 'canary', 'task-a');
    const b = new S3ServedReporter(s3, 'mappings', 'main', 'task-b');
    const gone = new S3ServedReporter(s3, 'mappings', 'main', 'task-gone');
    await Promise.all([a.update(7, 3), b.update(7, 2), gone.update(7, 1)]);
    await gone.stop(7);
    expect(await zonesCarried(s3, 'mappings', ['canary', 'main'], 3)).toEqual({ tasks: 2, behind: ['main/task-b (zones 2)'] });
    await expect(
      waitZonesCarried({ s3, bucket: 'mappings', groups: ['canary', 'main'], version: 3, since: Date.now(), timeoutMs: 300, pollMs: 100 }),
    ).rejects.toThrow(/1 of 2 router tasks do not carry zones version 3 yet: main\/task-b \(zones 2\)/);
    // The agent's next tick with the weights in force reports the new version at once (not at the heartbeat).
    await b.update(7, 3);
    const carried = await waitZonesCarried({
      s3,
      bucket: 'mappings',
      groups: ['canary', 'main'],
      version: 3,
      since: Date.now(),
      timeoutMs: 5000,
      pollMs: 100,
    });
    expect(carried.tasks).toBe(2);
  });
});
