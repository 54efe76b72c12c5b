import * as http from 'http';
import { AddressInfo } from 'net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { DescribeAvailabilityZonesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { CreateDBClusterCommand, CreateDBInstanceCommand, DescribeDBClustersCommand, RDSClient } from '@aws-sdk/client-rds';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { MappingStore } from '../../lib/adapters/mapping-store';
import { cellSignalsParameter, cellWriterFailoverRoleName, mappingBucketParameter, routerParameters } from '../../lib/domain/names';
import type { WriterOutcome } from '../../lib/domain/zones';
import { readAwsZones } from '../../lib/operations/zones';
import { S3ServedReporter } from '../../lib/runtime/router';
import { cellctlIn } from '../support/cli';
import { configDirs, exampleFleet } from '../support/fleet';
import { Moto, motoClientConfig, startMoto } from '../support/moto';

/**
 * `cellctl zone drain|undrain|status --region` end to end against moto (S3, SSM) and a local ARC
 * zonal shift endpoint answering as the service model says (moto has none): the region's bucket and
 * entry NLB found by their parameters, the zones document written, the NLB shifted away and back,
 * and the wait on router tasks' reports, made here by stand-ins that report whatever version the
 * bucket holds, as agents do after applying it.
 */
describe('cellctl zone in AWS (moto, recorded ARC answers)', () => {
  const dirs = configDirs();
  const NLB = 'arn:aws:elasticloadbalancing:us-east-1:222222222222:loadbalancer/net/orders-router/0123456789abcdef';
  let moto: Moto;
  let s3: S3Client;
  let arc: http.Server;
  const calls: string[] = [];
  let active: Record<string, unknown>[] = [];
  let agents: NodeJS.Timeout;
  const saved: Record<string, string | undefined> = {};
  let dir: string;

  beforeAll(async () => {
    moto = await startMoto();
    s3 = new S3Client({ ...motoClientConfig(moto, 'us-east-1'), forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: 'mappings-us' }));
    const ssm = new SSMClient(motoClientConfig(moto, 'us-east-1'));
    await ssm.send(new PutParameterCommand({ Name: mappingBucketParameter('orders'), Value: 'mappings-us', Type: 'String' }));
    await ssm.send(new PutParameterCommand({ Name: routerParameters.loadBalancerArn('orders'), Value: NLB, Type: 'String' }));
    ssm.destroy();
    arc = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const url = new URL(req.url!, 'http://local');
        calls.push(`${req.method} ${url.pathname}`);
        res.setHeader('content-type', 'application/json');
        if (req.method === 'GET') return void res.end(JSON.stringify({ items: active }));
        if (req.method === 'POST') {
          const body = JSON.parse(text);
          const shift = {
            zonalShiftId: 'shift-1',
            resourceIdentifier: body.resourceIdentifier,
            awayFrom: body.awayFrom,
            comment: body.comment,
            status: 'ACTIVE',
            startTime: 1764777600,
            expiryTime: 1764820800,
          };
          active = [shift];
          res.statusCode = 201;
          return void res.end(JSON.stringify(shift));
        }
        if (req.method === 'DELETE') {
          const shift = { ...active[0], status: 'CANCELED' };
          active = [];
          return void res.end(JSON.stringify(shift));
        }
        res.statusCode = 400;
        res.end('{"message":"unexpected"}');
      });
    });
    await new Promise<void>((resolve) => arc.listen(0, '127.0.0.1', resolve));
    const env = {
      AWS_ENDPOINT_URL: moto.endpoint,
      AWS_ENDPOINT_URL_ARC_ZONAL_SHIFT: `http://127.0.0.1:${(arc.address() as AddressInfo).port}`,
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
    // Two router tasks (canary and main groups) that report the zones version in the bucket.
    const store = new MappingStore(s3, 'mappings-us');
    const reporters = ['canary', 'main'].map((g) => new S3ServedReporter(s3, 'mappings-us', g, `task-${g}`));
    const report = async () => {
      const { document } = await readAwsZones(store, 'us-east-1', ['use1-az1', 'use1-az2', 'use1-az4']).catch(() => ({ document: undefined }));
      await Promise.all(reporters.map((r) => r.update(1, document?.version)));
    };
    await report();
    agents = setInterval(() => void report(), 200);
    dir = dirs.config();
  });
  afterAll(async () => {
    clearInterval(agents);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    arc?.close();
    s3?.destroy();
    await moto?.stop();
  });

  const zone = (...args: string[]) => cellctlIn(dir, 'zone', ...args, '--region', 'us-east-1', '--force-path-style');

  it('drains a zone: the document written, the entry NLB shifted away, and every router task carrying it', async () => {
    const drained = await zone('drain', 'use1-az2', '--reason', 'packet loss', '--no-capacity-check', '--json');
    expect(drained.err).not.toMatch(/error/i);
    expect(drained.code).toBe(0);
    const report = JSON.parse(drained.out);
    expect(report).toMatchObject({
      region: 'us-east-1',
      zone: 'use1-az2',
      weightBefore: 100,
      weight: 0,
      version: 2,
      shifts: [{ loadBalancer: NLB, action: 'started', zonalShiftId: 'shift-1' }],
    });
    expect(report.carried.tasks).toBe(2);
    expect(calls).toEqual(['GET /zonalshifts', 'POST /zonalshifts']);
    const status = await zone('status', '--json');
    expect(JSON.parse(status.out).document.zones['use1-az2']).toMatchObject({ weight: 0, reason: 'packet loss' });
  });

  it('refuses a zone the region does not have, and the last zone serving, writing nothing', async () => {
    expect((await zone('drain', 'use1-az3', '--no-capacity-check')).err).toMatch(/not one of us-east-1's zones/);
    expect((await zone('drain', 'use1-az1', '--no-capacity-check', '--no-shift', '--wait', '0')).code).toBe(0);
    const last = await zone('drain', 'use1-az4', '--no-capacity-check');
    expect(last.code).toBe(1);
    expect(last.err).toMatch(/every zone is drained/);
    expect(JSON.parse((await zone('status', '--json')).out).document.version).toBe(3);
  });

  it("--plan names the cells whose shape has one NAT gateway in the zone (natGateways: 'one'): their egress goes with it", async () => {
    const oneNat = dirs.config((text) => text.replace("instanceType: 't3.medium',", "instanceType: 't3.medium',\n      natGateways: 'one',"));
    const plan = (az: string) =>
      cellctlIn(oneNat, 'zone', 'drain', az, '--plan', '--no-capacity-check', '--region', 'us-east-1', '--force-path-style');
    // us-4 is the region's one small cell; its NAT gateway is in its first zone, use1-az1.
    const first = await plan('use1-az1');
    expect(first.code).toBe(0);
    expect(first.out).toContain(
      "the one NAT gateway of us-4 (shape natGateways 'one') is in this zone: while the zone is out, their tasks in every zone lose outbound access",
    );
    const other = await plan('use1-az2');
    expect(other.code).toBe(0);
    expect(other.out).not.toContain('NAT gateway');
  });

  it('undrains in steps, cancelling the shift at the last, each step carried by every router task', async () => {
    calls.length = 0;
    const undrained = await zone('undrain', 'use1-az2', '--steps', '50,100', '--bake', '0', '--json');
    // The bake reads the region's router alarms: moto has none of them, so none is in ALARM.
    expect(undrained.err).not.toMatch(/error/i);
    expect(undrained.code).toBe(0);
    const steps = JSON.parse(undrained.out);
    expect(steps.map((s: { weight: number }) => s.weight)).toEqual([50, 100]);
    expect(steps.every((s: { carried: { tasks: number } }) => s.carried.tasks === 2)).toBe(true);
    expect(steps[1].shifts).toEqual([{ loadBalancer: NLB, action: 'cancelled', zonalShiftId: 'shift-1' }]);
    expect(calls).toEqual(['GET /zonalshifts', 'DELETE /zonalshifts/shift-1']);
  });

  it("--failover-writers: after the drain, each cell's writer in the zone failed over through the cell's own role, one cell at a time; a second run leaves them", async () => {
    const fleet = exampleFleet();
    const cells = fleet.cells.filter((c) => c.region === 'us-east-1');
    expect(cells.map((c) => c.id)).toEqual(['us-1', 'us-2', 'us-3', 'us-4']);
    /** Clients in a cell's account, as its writer-failover role (moto: that account's own resources). */
    const as = async (cell: (typeof cells)[number]) => {
      const sts = new STSClient(motoClientConfig(moto));
      const roleArn = `arn:aws:iam::${cell.account}:role/${cellWriterFailoverRoleName(fleet.app, cell.id)}`;
      const { Credentials: c } = await sts.send(new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: 'seed' }));
      sts.destroy();
      const config = {
        ...motoClientConfig(moto),
        credentials: { accessKeyId: c!.AccessKeyId!, secretAccessKey: c!.SecretAccessKey!, sessionToken: c!.SessionToken },
      };
      return { ssm: new SSMClient(config), rds: new RDSClient(config), ec2: new EC2Client(config) };
    };
    const first = await as(cells[0]);
    const { AvailabilityZones } = await first.ec2.send(new DescribeAvailabilityZonesCommand({}));
    const nameOf = (id: string) => AvailabilityZones!.find((z) => z.ZoneId === id)!.ZoneName!;
    // us-1: writer in the zone, reader in use1-az1; us-2: writer in use1-az2; us-3: both in the zone; us-4 (RDS) in use1-az1.
    const layout: Record<string, string[]> = { 'us-1': ['use1-az4', 'use1-az1'], 'us-2': ['use1-az2', 'use1-az4'], 'us-3': ['use1-az4', 'use1-az4'] };
    for (const cell of cells) {
      const { ssm, rds, ec2 } = await as(cell);
      const cluster = cell.id in layout;
      const id = `${cell.id}-db`;
      const dimensions = cluster ? { DBClusterIdentifier: id } : { DBInstanceIdentifier: id };
      const record = {
        schemaVersion: 2,
        signals: { databaseCpu: { namespace: 'AWS/RDS', metricName: 'CPUUtilization', statistic: 'Average', dimensions } },
      };
      await ssm.send(new PutParameterCommand({ Name: cellSignalsParameter(fleet.app, cell.id), Value: JSON.stringify(record), Type: 'String' }));
      if (cluster) {
        await rds.send(
          new CreateDBClusterCommand({
            DBClusterIdentifier: id,
            Engine: 'aurora-postgresql',
            MasterUsername: 'admin1',
            MasterUserPassword: 'password123',
          }),
        );
        for (const [i, zoneId] of layout[cell.id].entries())
          await rds.send(
            new CreateDBInstanceCommand({
              DBInstanceIdentifier: `${id}-${i === 0 ? 'writer' : 'reader'}`,
              DBClusterIdentifier: id,
              Engine: 'aurora-postgresql',
              DBInstanceClass: 'db.r6g.large',
              AvailabilityZone: nameOf(zoneId),
            }),
          );
      } else {
        await rds.send(
          new CreateDBInstanceCommand({
            DBInstanceIdentifier: id,
            Engine: 'postgres',
            DBInstanceClass: 'db.t4g.medium',
            AllocatedStorage: 100,
            MasterUsername: 'admin1',
            MasterUserPassword: 'password123',
            AvailabilityZone: nameOf('use1-az1'),
          }),
        );
      }
      [ssm, rds, ec2].forEach((c) => c.destroy());
    }
    first.ssm.destroy();
    first.rds.destroy();
    first.ec2.destroy();

    const partial = await zone('drain', 'use1-az4', '--percent', '50', '--failover-writers', '--no-capacity-check');
    expect([partial.code, partial.err]).toEqual([2, expect.stringContaining('--failover-writers goes with a whole drain')]);

    const drained = await zone('drain', 'use1-az4', '--no-capacity-check', '--no-shift', '--failover-writers', '--writer-timeout', '60', '--json');
    expect(drained.err).not.toMatch(/error/i);
    expect(drained.code).toBe(0);
    const report = JSON.parse(drained.out) as { weight: number; writers: WriterOutcome[] };
    expect(report.weight).toBe(0);
    expect(report.writers).toEqual([
      { cell: 'us-1', kind: 'moved', from: 'use1-az4', to: 'use1-az1', ms: expect.any(Number) },
      { cell: 'us-2', kind: 'elsewhere', zone: 'use1-az2' },
      { cell: 'us-3', kind: 'stuck', reason: 'us-3-db has no available reader outside use1-az4 to promote; add one in another zone' },
      { cell: 'us-4', kind: 'elsewhere', zone: 'use1-az1' },
    ]);
    // In us-1's account, the reader in use1-az1 is the writer now.
    const us1 = await as(cells[0]);
    const { DBClusters } = await us1.rds.send(new DescribeDBClustersCommand({ DBClusterIdentifier: 'us-1-db' }));
    expect(DBClusters![0].DBClusterMembers!.find((m) => m.IsClusterWriter)!.DBInstanceIdentifier).toBe('us-1-db-reader');
    [us1.ssm, us1.rds, us1.ec2].forEach((c) => c.destroy());

    // Run again (a drain interrupted half-way): the writer that left is left alone.
    const again = await zone('drain', 'use1-az4', '--no-capacity-check', '--no-shift', '--failover-writers', '--writer-timeout', '60');
    expect(again.out).toContain('writer of us-1: in use1-az1, not the drained zone; left alone');
    expect(again.out).toContain('writer of us-3: stays in the zone: us-3-db has no available reader outside use1-az4');
  });
});
