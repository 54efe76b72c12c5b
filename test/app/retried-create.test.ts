import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { addPipeline } from '../../lib/app';
import { cdkApp, twoCellFleet } from '../support/fleet';

/** Properties that give a resource its physical name, by resource type. */
const NAME_PROPERTIES: Record<string, string> = {
  'AWS::S3::Bucket': 'BucketName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::KMS::Alias': 'AliasName',
  'AWS::SSM::Parameter': 'Name',
  'AWS::SecretsManager::Secret': 'Name',
  'AWS::RDS::DBCluster': 'DBClusterIdentifier',
  'AWS::RDS::DBInstance': 'DBInstanceIdentifier',
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::ECR::Repository': 'RepositoryName',
  'AWS::Lambda::Function': 'FunctionName',
};

/**
 * A first create that fails rolls back, but CloudFormation keeps what `DeletionPolicy: Retain` (or
 * `Snapshot` on a database's final snapshot name) protects; a kept resource with a fixed name then
 * makes the retry fail with "already exists". `RetainExceptOnCreate` deletes what the failed create
 * made; a name that contains the stack id differs on every create.
 */
describe('a retried first create', () => {
  it('meets no resource left behind under the same name, in any stack of the fleet or its pipeline', () => {
    // The pipeline app holds every stack of the fleet (each cell's, router's and router group's, in
    // its stages, stamped by the same constructs as `addFleet`'s), the pipeline stack itself
    // (deployed by hand once, re-created after a failed create or a delete) and its cross-region
    // support stacks. Two cells, one of each shape in each region, hold every resource type (with its
    // deletion policy) the example fleet's eight do.
    const fleet = twoCellFleet();
    const pipeline = addPipeline(cdkApp(), fleet, { audit: false });
    const support = Object.values(pipeline.pipeline.pipeline.crossRegionSupport).map((s) => s.stack);
    const all: Stack[] = [pipeline, ...support].flatMap((s) => [s, ...s.node.findAll().filter((c): c is Stack => c instanceof Stack && c !== s)]);
    const names = all.map((s) => s.stackName);
    // Every cell's stack, and every region's router stack and router group stacks.
    expect(names).toEqual(
      expect.arrayContaining([
        ...fleet.cells.map((c) => `${fleet.app}-cell-${c.id}`),
        ...Object.keys(fleet.regions).map((r) => `${fleet.app}-router-${r}`),
      ]),
    );
    for (const region of Object.keys(fleet.regions))
      expect(names.filter((n) => n.startsWith(`${fleet.app}-router-${region}-`)).length).toBeGreaterThan(0);
    const blocking: string[] = [];
    for (const stack of all) {
      for (const [id, resource] of Object.entries(
        Template.fromStack(stack).toJSON().Resources as Record<
          string,
          { Type: string; DeletionPolicy?: string; Properties?: Record<string, unknown> }
        >,
      )) {
        const property = NAME_PROPERTIES[resource.Type];
        const name = property ? resource.Properties?.[property] : undefined;
        if (resource.DeletionPolicy !== 'Retain' || name === undefined) continue;
        // New on every create: the stack id, or another resource's generated name or id.
        const text = JSON.stringify(name);
        if (text.includes('"AWS::StackId"') || /"Ref":"(?!AWS::)/.test(text) || text.includes('Fn::GetAtt')) continue;
        blocking.push(`${stack.stackName}/${id} (${resource.Type} ${JSON.stringify(name)})`);
      }
    }
    expect(blocking).toEqual([]);
  });
});
