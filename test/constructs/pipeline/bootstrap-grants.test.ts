import { Template } from 'aws-cdk-lib/assertions';
import { addPipeline, pipelineStackPropsOf } from '../../../lib/app';
import { Fleet } from '../../../lib/domain/fleet';
import { policySize } from '../../../lib/domain/limits';
import { parseBootstrapRoleArn, PipelineStack } from '../../../lib/constructs/pipeline';
import { cdkApp, smallExampleFleet, twoCellFleet } from '../../support/fleet';

interface Statement {
  Action: unknown;
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** Every sts:AssumeRole statement of the role whose logical id matches, across its inline and managed policies. */
function assumeStatements(template: Template, role: RegExp): Statement[] {
  const policies = [
    ...Object.values(template.findResources('AWS::IAM::Policy')),
    ...Object.values(template.findResources('AWS::IAM::ManagedPolicy')),
  ].filter((p) => (p.Properties.Roles ?? []).some((r: { Ref: string }) => role.test(r.Ref)));
  expect(policies.length).toBeGreaterThan(0);
  return policies.flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]).filter((s) => [s.Action].flat().includes('sts:AssumeRole'));
}

const pattern = (kind: string, region: string) => ({
  'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::*:role/cdk-hnb659fds-${kind}-role-*-${region}`]],
});
const ROLES = { pipeline: /^PipelineRole[0-9A-F]{8}$/, files: /^PipelineAssetsFileRole/, images: /^PipelineAssetsDockerRole/ };

describe('parseBootstrapRoleArn', () => {
  it('reads a CDK bootstrap role ARN however the template writes it', () => {
    expect(parseBootstrapRoleArn('arn:aws:iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-eu-west-1')).toEqual({
      account: '123456789012',
      qualifier: 'hnb659fds',
      kind: 'deploy',
      region: 'eu-west-1',
    });
    expect(
      parseBootstrapRoleArn({
        'Fn::Sub': 'arn:${AWS::Partition}:iam::123456789012:role/cdk-custom1-file-publishing-role-123456789012-ap-southeast-5',
      }),
    ).toEqual({ account: '123456789012', qualifier: 'custom1', kind: 'file-publishing', region: 'ap-southeast-5' });
    expect(
      parseBootstrapRoleArn({
        'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::123456789012:role/cdk-hnb659fds-image-publishing-role-123456789012-us-east-1']],
      }),
    ).toEqual({ account: '123456789012', qualifier: 'hnb659fds', kind: 'image-publishing', region: 'us-east-1' });
  });

  it('refuses every other role, so only bootstrap grants are rewritten', () => {
    for (const other of [
      'arn:aws:iam::123456789012:role/cdk-hnb659fds-cfn-exec-role-123456789012-eu-west-1', // the CloudFormation execution role: never assumed by the pipeline
      'arn:aws:iam::123456789012:role/cdk-hnb659fds-deploy-role-999999999999-eu-west-1', // account and name disagree
      'arn:aws:iam::123456789012:role/orders-eu-1-bake-watcher',
      { 'Fn::GetAtt': ['PipelineCodeBuildActionRole', 'Arn'] },
      { 'Fn::Sub': 'arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-hnb659fds-deploy-role-${AWS::AccountId}-eu-west-1' },
    ])
      expect(parseBootstrapRoleArn(other)).toBeUndefined();
  });
});

describe('the pipeline assumes bootstrap roles by pattern (the example fleet, three of its cells)', () => {
  let fleet: Fleet;
  let withOrg: Template;
  let withoutOrg: Template;
  let noOrg: Fleet;
  beforeAll(() => {
    fleet = smallExampleFleet();
    expect(fleet.pipeline!.organizationId).toMatch(/^o-/);
    withOrg = Template.fromStack(addPipeline(cdkApp(), fleet, { audit: false }));
    // Without an organization the conditions list the accounts: the two-cell cut's are enough to see them.
    const small = twoCellFleet();
    noOrg = { ...small, pipeline: { ...small.pipeline!, organizationId: undefined } };
    const app = cdkApp();
    withoutOrg = Template.fromStack(new PipelineStack(app, `${noOrg.app}-pipeline`, pipelineStackPropsOf(noOrg)));
  });

  const regions = () => Object.keys(fleet.regions).sort();

  // One ARN per environment in one statement each would be 128 characters apiece, a ceiling at 58 cells.
  it('grants the pipeline role every deploy role, and the asset roles every publishing role, by one pattern per region within the organization', () => {
    for (const [role, kind] of [
      [ROLES.pipeline, 'deploy'],
      [ROLES.files, 'file-publishing'],
      [ROLES.images, 'image-publishing'],
    ] as const) {
      const statements = assumeStatements(withOrg, role);
      const listed = statements.flatMap((s) => [s.Resource].flat()).filter((r) => parseBootstrapRoleArn(r) !== undefined);
      expect(listed).toEqual([]);
      const patterned = statements.filter((s) => s.Condition);
      expect(patterned).toHaveLength(1);
      expect(patterned[0].Condition).toEqual({ StringEquals: { 'aws:ResourceOrgID': fleet.pipeline!.organizationId } });
      expect([patterned[0].Resource].flat()).toEqual(regions().map((r) => pattern(kind, r)));
    }
  });

  it("without an organization id, conditions the same patterns on the fleet's accounts", () => {
    const cellAndRouter = [...new Set([...noOrg.cells.map((c) => c.account), noOrg.accounts.router])].sort();
    for (const [role, kind] of [
      [ROLES.pipeline, 'deploy'],
      [ROLES.files, 'file-publishing'],
      [ROLES.images, 'image-publishing'],
    ] as const) {
      const [patterned, ...more] = assumeStatements(withoutOrg, role).filter((s) => s.Condition);
      expect(more).toEqual([]);
      expect([patterned.Resource].flat()).toEqual(regions().map((r) => pattern(kind, r)));
      const accounts = [patterned.Condition!.StringEquals['aws:ResourceAccount']].flat();
      // The asset roles publish to cells and routers only; the pipeline role deploys there too.
      expect(accounts).toEqual(cellAndRouter);
    }
  });

  it('keeps the statement the same size whatever the number of cells (organization id)', () => {
    // One pattern per region and kind: nothing in the statement depends on the accounts.
    const [patterned] = assumeStatements(withOrg, ROLES.pipeline).filter((s) => s.Condition);
    expect(policySize(patterned)).toBeLessThan(400);
    expect(JSON.stringify(patterned)).not.toMatch(/\d{12}/);
  });

  it("bounds the bake steps by their own wave's accounts, never the organization (a bake must not reach another wave's stacks)", () => {
    const bakes = Object.values(withOrg.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p).includes('bake-watcher'));
    expect(bakes.length).toBeGreaterThan(2);
    for (const bake of bakes) {
      const statements = (bake.Properties.PolicyDocument.Statement as Statement[]).filter((s) => [s.Action].flat().includes('sts:AssumeRole'));
      expect(statements.length).toBeGreaterThan(0);
      for (const s of statements) {
        // Each names its wave's accounts (lib/constructs/pipeline/stage-grants.ts), a strict part of the fleet's.
        expect(Object.keys(s.Condition ?? {})).toEqual(['StringEquals']);
        expect(Object.keys(s.Condition!.StringEquals)).toEqual(['aws:ResourceAccount']);
        const accounts = [s.Condition!.StringEquals['aws:ResourceAccount']].flat();
        expect(accounts.length).toBeLessThan(new Set([...fleet.cells.map((c) => c.account), fleet.accounts.router]).size);
      }
    }
  });
});
