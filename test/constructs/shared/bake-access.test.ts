import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CellBakeAccess } from '../../../lib/constructs/shared/bake-access';
import { FARGATE_CELL, TestStack } from '../../support/cell';

/**
 * The construct alone in a bare stack. That each cell stack holds one for the fleet's tooling
 * account, and that each wave's bake step can assume exactly its cells' roles, is checked on the
 * example fleet's pipeline by test/iam/runtime-calls.test.ts.
 */
describe('CellBakeAccess', () => {
  let template: Template;
  beforeAll(() => {
    const stack = new TestStack();
    new CellBakeAccess(stack, 'BakeAccess', { roleName: `orders-${FARGATE_CELL}-bake-watcher`, toolingAccount: '111111111111' });
    template = Template.fromStack(stack);
  });

  it('lets only the tooling account describe alarms (composite included) and do nothing else', () => {
    const [roleId, role] = Object.entries(
      template.findResources('AWS::IAM::Role', { Properties: { RoleName: `orders-${FARGATE_CELL}-bake-watcher` } }),
    )[0];
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      expect.objectContaining({ Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::111111111111:root' } }),
    ]);
    const [policy] = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
    // On `*`: DescribeAlarms returns composite alarms only to a permission not scoped to alarm ARNs.
    expect(policy.Properties.PolicyDocument.Statement).toEqual([{ Action: 'cloudwatch:DescribeAlarms', Effect: 'Allow', Resource: '*' }]);
  });

  it('refuses a tooling account that is not a 12-digit id, naming the field', () => {
    expect(() => new CellBakeAccess(new Stack(), 'BakeAccess', { roleName: 'r', toolingAccount: '11111' })).toThrow(
      'CellBakeAccess: toolingAccount `11111` is not a 12-digit account id',
    );
  });
});
