import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CrossAccountReadRole } from '../../../lib/constructs/shared/cross-account-read-role';
import { cdkApp } from '../../support/fleet';

describe('CrossAccountReadRole', () => {
  const stack = new Stack(cdkApp(), 'Reads', { env: { account: '222222222222', region: 'eu-west-1' } });
  new CrossAccountReadRole(stack, 'Watcher', {
    roleName: 'watcher',
    description: 'reads alarms',
    trustedAccount: '111111111111',
    actions: ['cloudwatch:DescribeAlarms'],
    resources: ['*'],
  });
  new CrossAccountReadRole(stack, 'Reader', {
    roleName: 'reader',
    description: 'reads a parameter',
    trustedAccount: '333333333333',
    trustedRolePrefix: 'orders-router-',
    actions: ['ssm:GetParameter'],
    resources: ['arn:aws:ssm:eu-west-1:222222222222:parameter/x'],
  });
  let template: Template;
  beforeAll(() => {
    template = Template.fromStack(stack);
  });

  const roleNamed = (name: string) => Object.entries(template.findResources('AWS::IAM::Role', { Properties: { RoleName: name } }))[0];
  const statementsOf = (roleId: string) =>
    Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
      (policy) => policy.Properties.PolicyDocument.Statement,
    );

  it('is assumed by the trusted account and may do the one read it names, nothing else', () => {
    const [roleId, role] = roleNamed('watcher');
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::111111111111:root' } },
    ]);
    expect(statementsOf(roleId)).toEqual([{ Action: 'cloudwatch:DescribeAlarms', Effect: 'Allow', Resource: '*' }]);
  });

  it("with a role prefix, only the trusted account's roles of that prefix may assume it", () => {
    const [roleId, role] = roleNamed('reader');
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { AWS: 'arn:aws:iam::333333333333:root' },
        Condition: { ArnLike: { 'aws:PrincipalArn': 'arn:aws:iam::333333333333:role/orders-router-*' } },
      },
    ]);
    expect(statementsOf(roleId)).toEqual([
      { Action: 'ssm:GetParameter', Effect: 'Allow', Resource: 'arn:aws:ssm:eu-west-1:222222222222:parameter/x' },
    ]);
  });

  it('refuses an action that is not a read, a malformed account, and an empty grant, naming what is wrong', () => {
    const props = { roleName: 'r', description: 'd', trustedAccount: '111111111111', actions: ['ssm:GetParameter'], resources: ['*'] };
    const scope = new Stack(cdkApp(), 'Refused');
    expect(() => new CrossAccountReadRole(scope, 'A', { ...props, actions: ['ssm:GetParameter', 's3:PutObject'] })).toThrow(
      'CrossAccountReadRole A: `s3:PutObject` is not a read (Get*, Describe*, List*)',
    );
    expect(() => new CrossAccountReadRole(scope, 'B', { ...props, trustedAccount: '1111' })).toThrow(
      'CrossAccountReadRole B: trustedAccount `1111` is not a 12-digit account id',
    );
    expect(() => new CrossAccountReadRole(scope, 'C', { ...props, resources: [] })).toThrow(
      'CrossAccountReadRole C: name at least one action and one resource',
    );
  });
});
