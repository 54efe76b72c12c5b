import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CellWriterFailoverAccess } from '../../../lib/constructs/cell/writer-failover';
import { EC2_CELL, FARGATE_CELL, synthCells } from '../../support/cell';
import { exampleFleet } from '../../support/fleet';

type Statement = { Action: string | string[]; Resource: unknown };
const actions = (s: Statement) => [s.Action].flat().sort();

/** The policy statements of the role named `name` in `template`. */
function statementsOf(template: Template, name: string): { trust: unknown; statements: Statement[] } {
  const [roleId, role] = Object.entries(template.findResources('AWS::IAM::Role', { Properties: { RoleName: name } }))[0];
  const [policy] = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
  return { trust: role.Properties.AssumeRolePolicyDocument.Statement, statements: policy.Properties.PolicyDocument.Statement };
}

describe('CellWriterFailoverAccess in the cell stacks', () => {
  const fleet = exampleFleet();
  let cells: ReturnType<typeof synthCells>;
  beforeAll(() => {
    cells = synthCells([FARGATE_CELL, EC2_CELL]);
  });

  it(`${FARGATE_CELL} (Aurora): the router account may read the cluster and its two instances and fail the cluster over, nothing else`, () => {
    const { template } = cells[FARGATE_CELL];
    const { trust, statements } = statementsOf(template, `orders-${FARGATE_CELL}-db-failover`);
    expect(trust).toEqual([{ Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${fleet.accounts.router}:root` } }]);
    expect(statements.map(actions)).toEqual([
      ['rds:DescribeDBClusters', 'rds:FailoverDBCluster'],
      ['rds:DescribeDBInstances', 'rds:FailoverDBCluster'],
      ['ssm:GetParameter'],
      ['ec2:DescribeAvailabilityZones'],
    ]);
    const [parameter] = Object.keys(template.findResources('AWS::SSM::Parameter', { Properties: { Name: `/orders/cell/${FARGATE_CELL}/signals` } }));
    expect(JSON.stringify(statements[2].Resource)).toContain(parameter);
    const [cluster] = Object.keys(template.findResources('AWS::RDS::DBCluster'));
    expect(JSON.stringify(statements[0].Resource)).toContain(cluster);
    const instances = Object.keys(template.findResources('AWS::RDS::DBInstance'));
    expect(instances).toHaveLength(2);
    const described = JSON.stringify(statements[1].Resource);
    for (const id of instances) expect(described).toContain(id);
    expect(described).toContain(':db:');
    expect(statements[3].Resource).toBe('*');
  });

  it(`${EC2_CELL} (Multi-AZ RDS): may read the instance and reboot it with failover, nothing else`, () => {
    const { template } = cells[EC2_CELL];
    const { statements } = statementsOf(template, `orders-${EC2_CELL}-db-failover`);
    expect(statements.map(actions)).toEqual([
      ['rds:DescribeDBInstances', 'rds:RebootDBInstance'],
      ['ssm:GetParameter'],
      ['ec2:DescribeAvailabilityZones'],
    ]);
    const [instance] = Object.keys(template.findResources('AWS::RDS::DBInstance'));
    expect(JSON.stringify(statements[0].Resource)).toContain(instance);
  });
});

describe('CellWriterFailoverAccess alone', () => {
  it('passes the AwsSolutions checks with its one acknowledged wildcard', () => {
    const stack = new Stack(undefined, 'Bare', { env: { account: '111111111111', region: 'eu-west-1' } });
    new CellWriterFailoverAccess(stack, 'WriterFailover', {
      roleName: 'app-c1-db-failover',
      operatorAccount: '222222222222',
      database: { kind: 'instance', instanceArn: 'arn:aws:rds:eu-west-1:111111111111:db:c1' },
      identifierParameterArn: 'arn:aws:ssm:eu-west-1:111111111111:parameter/app/cell/c1/signals',
    });
    expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
    Template.fromStack(stack).resourceCountIs('AWS::IAM::Role', 1);
  });

  it('refuses a cluster without a reader to promote, and an account that is not one', () => {
    const stack = new Stack();
    const cluster = {
      kind: 'cluster' as const,
      clusterArn: 'arn:aws:rds:eu-west-1:111111111111:cluster:c1',
      instanceArns: ['arn:aws:rds:eu-west-1:111111111111:db:w'],
    };
    expect(
      () =>
        new CellWriterFailoverAccess(stack, 'A', { roleName: 'r', operatorAccount: '222222222222', database: cluster, identifierParameterArn: 'p' }),
    ).toThrow('CellWriterFailoverAccess: database.instanceArns must name the writer and at least one reader');
    expect(
      () =>
        new CellWriterFailoverAccess(stack, 'B', {
          roleName: 'r',
          operatorAccount: 'router',
          database: { kind: 'instance', instanceArn: 'arn:aws:rds:eu-west-1:111111111111:db:c1' },
          identifierParameterArn: 'p',
        }),
    ).toThrow(/operatorAccount/);
  });
});
