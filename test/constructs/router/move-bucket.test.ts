import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { MoveBucket } from '../../../lib/constructs/router/move-bucket';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Fleet } from '../../../lib/domain/fleet';
import { routerStackPropsOf } from '../../../lib/app/router-props';
import { RouterStack } from '../../../lib/constructs/router';
import { cdkApp, exampleFleet } from '../../support/fleet';

type Json = Record<string, any>;

describe("MoveBucket (in the first region's router stack)", () => {
  let fleet: Fleet;
  let primary: RouterStack;
  let secondary: RouterStack;
  let t: Template;
  let t2: Template;
  let bucketId: string;
  let policy: Json[];
  beforeAll(() => {
    fleet = exampleFleet();
    const app = cdkApp();
    primary = new RouterStack(app, 'router-eu-west-1', routerStackPropsOf(fleet, 'eu-west-1'));
    secondary = new RouterStack(app, 'router-us-east-1', routerStackPropsOf(fleet, 'us-east-1'));
    t = Template.fromStack(primary);
    t2 = Template.fromStack(secondary);
    bucketId = primary.getLogicalId(primary.moves!.bucket.node.defaultChild as never);
    const policies = Object.values(t.findResources('AWS::S3::BucketPolicy')).filter((p) => JSON.stringify(p.Properties.Bucket).includes(bucketId));
    expect(policies).toHaveLength(1);
    policy = policies[0].Properties.PolicyDocument.Statement;
  });

  it("is one bucket per fleet, in the router account's first region only", () => {
    expect(primary.moves).toBeDefined();
    expect(secondary.moves).toBeUndefined();
    // Besides the mapping bucket's and the router groups' hand-over parameters: exactly one for moves.
    const names = Object.values(t.findResources('AWS::SSM::Parameter')).map((r) => r.Properties.Name as string);
    expect(names.filter((n) => /moves/.test(n))).toEqual(['/orders/moves/bucket']);
    t.hasResourceProperties('AWS::SSM::Parameter', { Name: '/orders/moves/bucket', Value: { Ref: bucketId } });
    expect(Object.keys(t2.findResources('AWS::SSM::Parameter', { Properties: { Name: '/orders/moves/bucket' } }))).toEqual([]);
  });

  it('is versioned, encrypted, private, owner-enforced, logged, and expires hand-off data and task files but not move records', () => {
    const bucket = t.toJSON().Resources[bucketId];
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties).toMatchObject({
      VersioningConfiguration: { Status: 'Enabled' },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      LoggingConfiguration: { LogFilePrefix: 'move-bucket/' },
    });
    const rules = bucket.Properties.LifecycleConfiguration.Rules as Json[];
    const byPrefix = Object.fromEntries(rules.map((r) => [r.Prefix, r]));
    expect(byPrefix['handoff/']).toMatchObject({ ExpirationInDays: 14, Status: 'Enabled' });
    expect(byPrefix['tasks/']).toMatchObject({ ExpirationInDays: 14, Status: 'Enabled' });
    expect(byPrefix['moves/'].ExpirationInDays).toBeUndefined();
    // Named after the stack id: a retried first create makes a new bucket instead of failing on the retained one.
    expect(JSON.stringify(bucket.Properties.BucketName)).toContain(
      '"orders-moves-222222222222-",{"Fn::Select":[4,{"Fn::Split":["-",{"Fn::Select":[2,{"Fn::Split":["/",{"Ref":"AWS::StackId"}',
    );
  });

  it("lets each cell account's mover role write only its from= lanes and read only its to= lanes, by one statement for every cell, bounded by the organization", () => {
    const write = policy.find((s) => s.Sid === 'CellMoversWriteOwnLanes')!;
    const read = policy.find((s) => s.Sid === 'CellMoversReadOwnLanes')!;
    for (const s of [write, read]) {
      expect(s.Effect).toBe('Allow');
      // A pattern bounded by the organization, not one principal per cell: the policy does not grow with the fleet.
      expect(s.Principal).toEqual({ AWS: '*' });
      expect(s.Condition).toEqual({
        ArnLike: { 'aws:PrincipalArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::*:role/orders-*-mover']] } },
        StringEquals: { 'aws:PrincipalOrgID': fleet.pipeline!.organizationId },
        StringNotEquals: { 'aws:PrincipalAccount': [fleet.accounts.router, fleet.accounts.tooling] },
      });
    }
    expect(write.Action).toBe('s3:PutObject');
    expect(read.Action).toBe('s3:GetObject');
    const suffixes = (s: Json) => (s.Resource as Json[]).map((r) => r['Fn::Join'][1].at(-1));
    expect(suffixes(write)).toEqual(['/handoff/*/from=${aws:PrincipalAccount}/*', '/tasks/${aws:PrincipalAccount}/*/result.json']);
    expect(suffixes(read)).toEqual(['/handoff/*/to=${aws:PrincipalAccount}/*', '/tasks/${aws:PrincipalAccount}/*/request.json']);
    // TLS only.
    expect(policy.some((s) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false')).toBe(true);
  });

  it('has the move operator write the mapping buckets of every region (freeze, flip), next to the publisher', () => {
    for (const template of [t, t2]) {
      const deny = Object.values(template.findResources('AWS::S3::BucketPolicy'))
        .flatMap((p) => p.Properties.PolicyDocument.Statement as Json[])
        .find((s) => s.Effect === 'Deny' && s.Condition?.ArnNotEquals && JSON.stringify(s.Condition).includes('mapping-publisher'));
      expect(JSON.stringify(deny!.Condition)).toContain(':iam::222222222222:role/orders-move-operator');
    }
  });

  it('gives the operator role a trust of the router and tooling accounts and the launcher roles of every cell, by one pattern bounded by the organization', () => {
    const role = t.toJSON().Resources[primary.getLogicalId(primary.moves!.operator.node.defaultChild as never)];
    expect(role.Properties.RoleName).toBe('orders-move-operator');
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(':iam::222222222222:root');
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(`:iam::${fleet.accounts.tooling}:root`);
    const statements = Object.values(t.findResources('AWS::IAM::Policy')).flatMap((p) => p.Properties.PolicyDocument.Statement as Json[]);
    const assume = statements.filter((s) => s.Action === 'sts:AssumeRole' && JSON.stringify(s.Resource).includes('mover-launcher'));
    expect(assume).toEqual([
      {
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::*:role/orders-*-mover-launcher']] },
        Condition: { StringEquals: { 'aws:ResourceOrgID': fleet.pipeline!.organizationId } },
      },
    ]);
  });

  it("lists the cells' accounts and launcher roles instead when the fleet names no organization", () => {
    const noOrg: Fleet = { ...fleet, pipeline: { ...fleet.pipeline!, organizationId: undefined } };
    const stack = new RouterStack(cdkApp(), 'router-eu-west-1', routerStackPropsOf(noOrg, 'eu-west-1'));
    const template = Template.fromStack(stack);
    const text = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    for (const cell of fleet.cells) expect(text).toContain(`:iam::${cell.account}:role/orders-${cell.id}-mover-launcher`);
    const bucketPolicy = JSON.stringify(template.findResources('AWS::S3::BucketPolicy'));
    for (const cell of fleet.cells) expect(bucketPolicy).toContain(`:iam::${cell.account}:root`);
  });

  it('has no unacknowledged AwsSolutions finding', () => {
    expect(
      new AwsSolutionsChecks().validateScope(primary).violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe('MoveBucket: bad input', () => {
  const props = (app: string, handoffDays?: number) => {
    const stack = new Stack(cdkApp(), 's', { env: { account: '222222222222', region: 'eu-west-1' } });
    return () =>
      new MoveBucket(stack, 'M', {
        app,
        routerAccount: '222222222222',
        toolingAccount: '111111111111',
        cells: [{ id: 'a', account: '333333333330' }],
        accessLogs: new s3.Bucket(stack, 'L'),
        parameterName: '/x/moves/bucket',
        mappingBucketPrefix: 'x-mappings',
        mappingRegions: ['eu-west-1'],
        mappingBucketParameter: '/x/router/mapping-bucket',
        routerClusterParameter: '/x/router/cluster-name',
        handoffDays,
      });
  };
  it('refuses an app name that makes the bucket name too long, and a retention of no days', () => {
    expect(props('a'.repeat(40))).toThrow(/longer than 50 characters/);
    expect(props('orders', 0)).toThrow(/handoffDays 0/);
    expect(props('orders', 7)).not.toThrow();
  });
});
