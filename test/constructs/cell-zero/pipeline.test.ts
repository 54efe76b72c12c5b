import { NestedStack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { addPipeline, isolationChecksPropsOf } from '../../../lib/app';
import { Fleet, resolveFleet } from '../../../lib/domain/fleet';
import { CellIsolationChecks } from '../../../lib/constructs/isolation';
import { PipelineStack } from '../../../lib/constructs/pipeline';
import { CELL_ZERO_ACCOUNT, cellZeroInput } from '../../support/cell-zero';
import { cdkApp } from '../../support/fleet';

interface CfnStage {
  Name: string;
  Actions: { Name: string; ActionTypeId: { Provider: string }; Configuration?: Record<string, unknown>; RoleArn?: unknown }[];
  OnFailure?: { Result?: string };
}

/**
 * The example fleet adopting a cell zero, cut to its canary cell (eu-west-1, beside cell zero) and
 * one cell in us-east-1: a cell wave after the adoption wave, and both regions' routers to link it.
 */
const fleetOf = (overrides: Parameters<typeof cellZeroInput>[0] = {}) => {
  const input = cellZeroInput(overrides);
  return resolveFleet({ ...input, cells: input.cells.filter((c) => ['canary-eu', 'us-1'].includes(c.id)) });
};

describe('the pipeline of a fleet with a cell zero', () => {
  let fleet: Fleet;
  let stack: PipelineStack;
  let stages: CfnStage[];
  let template: Template;
  beforeAll(() => {
    fleet = fleetOf();
    stack = addPipeline(cdkApp(), fleet, { audit: false });
    template = Template.fromStack(stack);
    stages = Object.values(template.findResources('AWS::CodePipeline::Pipeline'))[0].Properties.Stages;
  });

  it('deploys the adoption stack as a wave of its own, before the canary wave and the routers', () => {
    const names = stages.map((s) => s.Name);
    expect(stack.cellZeroStage).toBe('cell-zero-adoption');
    expect(names.slice(0, 5)).toEqual(['Source', 'Build', 'UpdatePipeline', 'Assets', 'cell-zero-adoption']);
    expect(names.indexOf('cell-zero-adoption')).toBeLessThan(names.indexOf(`cell-${fleet.cells.find((c) => c.canary)!.id}`));
    const zero = stages.find((s) => s.Name === 'cell-zero-adoption')!;
    const deploys = zero.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation');
    expect(deploys.map((a) => a.Configuration?.StackName)).toEqual(['orders-cell-zero-adoption']);
    expect(JSON.stringify(deploys[0].RoleArn)).toContain(CELL_ZERO_ACCOUNT);
    // Rolled back like any wave when it fails.
    expect(zero.OnFailure?.Result).toBe('ROLLBACK');
    // The pipeline may assume the bootstrap roles of cell zero's account, as of every cell's.
    const grants = Object.values(template.findResources('AWS::IAM::Policy'))
      .map((p) => JSON.stringify(p.Properties.PolicyDocument))
      .filter((doc) => doc.includes('aws:ResourceAccount') && doc.includes('cdk-hnb659fds-deploy-role'));
    expect(grants.some((doc) => doc.includes(CELL_ZERO_ACCOUNT))).toBe(true);
  });

  it("gives every router region's lookup of cell zero the adoption endpoint service's fingerprint, which follows that service", () => {
    const lookups = (of: PipelineStack) =>
      (of.node.findAll().filter((c) => c.constructor.name === 'CellLinksStack') as unknown as NestedStack[])
        .flatMap((n) => Object.values(Template.fromStack(n).findResources('Custom::CellEndpointServiceName')))
        .map((r) => [r.Properties.CellId as string, r.Properties.Fingerprint as string] as const);
    const before = lookups(stack);
    const zero = new Set(before.filter(([cell]) => cell === 'zero').map(([, fingerprint]) => fingerprint));
    expect(before.filter(([cell]) => cell === 'zero')).toHaveLength(Object.keys(fleet.regions).length);
    expect([...zero]).toEqual([expect.stringMatching(/^[0-9a-f]{16}$/)]);
    // The adoption NLB in other subnets: cell zero's service name is read again; the cells' are not.
    const moved = lookups(
      addPipeline(
        cdkApp(),
        fleetOf({ vpc: { id: 'vpc-0123456789abcdef0', privateSubnetIds: ['subnet-0ddddddddddddddd4', 'subnet-0eeeeeeeeeeeeeee5'] } }),
        { audit: false },
      ),
    );
    expect(moved.filter(([cell]) => cell === 'zero').every(([, fingerprint]) => !zero.has(fingerprint))).toBe(true);
    expect(moved.filter(([cell]) => cell !== 'zero')).toEqual(before.filter(([cell]) => cell !== 'zero'));
  });

  it("bakes it on cell zero's own health alarm, read through its bake watcher", () => {
    const zero = stages.find((s) => s.Name === 'cell-zero-adoption')!;
    const bake = zero.Actions.filter((a) => a.ActionTypeId.Provider === 'CodeBuild').map(
      (a) => (a.Configuration?.ProjectName as { Ref: string }).Ref,
    );
    const sources = bake.map((ref) => JSON.stringify(template.toJSON().Resources[ref].Properties.Source));
    expect(sources.some((s) => s.includes(`'zero ${CELL_ZERO_ACCOUNT} eu-west-1 orders-zero-health orders-zero-bake-watcher'`))).toBe(true);
  });

  it("keeps every wave watching only its own cells (CellIsolation CI5), cell zero's included", () => {
    const report = new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet)).validateScope(stack);
    expect(report.violations.filter((v) => v.ruleName.startsWith('CellIsolation-CI5'))).toEqual([]);
  });
});
