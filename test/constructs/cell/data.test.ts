import { Match, Template } from 'aws-cdk-lib/assertions';
import { DEFAULT_POSTGRES_VERSION, postgresVersionProblem } from '../../../lib/domain/fleet';
import { EC2_CELL, FARGATE_CELL, synthBareCells } from '../../support/cell';

describe('CellData', () => {
  let aurora: Template;
  let rds: Template;
  beforeAll(() => {
    const cells = synthBareCells([FARGATE_CELL, EC2_CELL]);
    aurora = cells[FARGATE_CELL].template;
    rds = cells[EC2_CELL].template;
  });

  it('runs Aurora PostgreSQL encrypted, backed up, with a reader in another AZ', () => {
    aurora.hasResourceProperties('AWS::RDS::DBCluster', {
      Engine: 'aurora-postgresql',
      // The default is a minor RDS and Aurora still create (docs/getting-started.md, PostgreSQL versions).
      EngineVersion: DEFAULT_POSTGRES_VERSION,
      StorageEncrypted: true,
      DeletionProtection: Match.absent(),
      BackupRetentionPeriod: 14,
      EnableIAMDatabaseAuthentication: true,
      Port: 5433,
      EnableCloudwatchLogsExports: ['postgresql'],
    });
    aurora.hasResourceProperties('AWS::RDS::DBInstance', { MonitoringInterval: 60 });
    aurora.resourceCountIs('AWS::RDS::DBInstance', 2);
    // Deletion protection is left out of the template (absent, so an update never switches it back
    // off): a failed first create must be able to delete the database; the pipeline switches it on.
    for (const instance of Object.values(aurora.findResources('AWS::RDS::DBInstance')))
      expect(instance.Properties.DeletionProtection).toBeUndefined();
    const [cluster] = Object.values(aurora.findResources('AWS::RDS::DBCluster'));
    expect(cluster.DeletionPolicy).toBe('Snapshot');
  });

  it('runs RDS PostgreSQL Multi-AZ as the shape option', () => {
    rds.resourceCountIs('AWS::RDS::DBCluster', 0);
    rds.hasResourceProperties('AWS::RDS::DBInstance', {
      Engine: 'postgres',
      EngineVersion: DEFAULT_POSTGRES_VERSION,
      MultiAZ: true,
      StorageEncrypted: true,
      DeletionProtection: Match.absent(),
      BackupRetentionPeriod: 7,
      AllocatedStorage: '100',
      MonitoringInterval: 60,
      EnableCloudwatchLogsExports: ['postgresql', 'upgrade'],
    });
  });

  it('defaults to a version both RDS and Aurora list in aws-cdk-lib and that validation accepts', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- read as a plain object: the test looks its version constants up by name
    const { AuroraPostgresEngineVersion, PostgresEngineVersion } = require('aws-cdk-lib/aws-rds');
    const key = `VER_${DEFAULT_POSTGRES_VERSION.replace('.', '_')}`;
    expect(PostgresEngineVersion[key]?.postgresFullVersion).toBe(DEFAULT_POSTGRES_VERSION);
    expect(AuroraPostgresEngineVersion[key]?.auroraPostgresFullVersion).toBe(DEFAULT_POSTGRES_VERSION);
    expect(postgresVersionProblem(DEFAULT_POSTGRES_VERSION)).toBeUndefined();
  });

  it.each([
    ['aurora', () => aurora],
    ['rds', () => rds],
  ])('%s: keeps credentials in Secrets Manager, rotated', (_name, template) => {
    template().resourceCountIs('AWS::SecretsManager::Secret', 1);
    template().hasResourceProperties('AWS::SecretsManager::RotationSchedule', {
      RotationRules: { ScheduleExpression: 'rate(30 days)' },
    });
  });

  it.each([
    ['aurora', () => aurora],
    ['rds', () => rds],
  ])("%s: lives in isolated subnets, reachable only from the workload, rotation and the cell's mover", (_name, template) => {
    const [group] = Object.values(template().findResources('AWS::RDS::DBSubnetGroup'));
    for (const subnet of group.Properties.SubnetIds) expect(subnet.Ref).toMatch(/dataSubnet/);
    const [dbGroup] = Object.keys(template().findResources('AWS::EC2::SecurityGroup')).filter((id) =>
      /^CellData(Cluster|Instance)SecurityGroup/.test(id),
    );
    const rules = Object.values(
      template().findResources('AWS::EC2::SecurityGroupIngress', {
        Properties: { GroupId: { 'Fn::GetAtt': [dbGroup, 'GroupId'] } },
      }),
    ).map((r) => r.Properties);
    expect(rules.map((r) => r.SourceSecurityGroupId['Fn::GetAtt'][0]).sort()).toEqual([
      expect.stringMatching(/^CellComputeSecurityGroup/),
      expect.stringMatching(/RotationSingleUserSecurityGroup/),
      expect.stringMatching(/^CellMoverSecurityGroup/),
    ]);
    for (const rule of rules) expect(rule.CidrIp).toBeUndefined();
    expect(template().findResources('AWS::EC2::SecurityGroup')[dbGroup].Properties.SecurityGroupIngress).toBeUndefined();
  });
});
