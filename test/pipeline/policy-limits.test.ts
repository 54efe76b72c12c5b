import { App, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { addPolicySizeLimit, policiesOverLimit, policySize, renderForSize } from '../../lib/pipeline/policy-limits';

const roleArns = (n: number) => Array.from({ length: n }, (_, i) => `arn:aws:iam::${String(100000000000 + i)}:role/cdk-hnb659fds-deploy-role-${String(100000000000 + i)}-eu-west-1`);

describe('policy size limits (synth fails where CloudFormation would)', () => {
  it('sizes a document as deployed: intrinsics rendered, no whitespace', () => {
    expect(renderForSize({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::b/*']] })).toBe('arn:aws:s3:::b/*');
    expect(policySize({ Version: '2012-10-17' })).toBe('{"Version":"2012-10-17"}'.length);
    expect(String(renderForSize({ 'Fn::GetAtt': ['Role', 'Arn'] })).length).toBe(80);
  });

  it('finds a managed policy over 6,144 characters, a role with inline policies over 10,240, a bucket policy over 20 KB', () => {
    const big = { Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: roleArns(90) }] };
    const over = policiesOverLimit({
      Resources: {
        Managed: { Type: 'AWS::IAM::ManagedPolicy', Properties: { PolicyDocument: big } },
        Small: { Type: 'AWS::IAM::ManagedPolicy', Properties: { PolicyDocument: { Statement: [] } } },
        InlineA: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: big, Roles: [{ Ref: 'R' }] } },
        InlineB: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: big, Roles: [{ Ref: 'R' }] } },
        Bucket: { Type: 'AWS::S3::BucketPolicy', Properties: { PolicyDocument: { Statement: [{ Effect: 'Allow', Principal: { AWS: roleArns(300) }, Action: 's3:GetObject', Resource: '*' }] } } },
      },
    });
    expect(over.map((o) => [o.what, o.limit])).toEqual([
      ['AWS::IAM::ManagedPolicy Managed', 6144],
      ['AWS::S3::BucketPolicy Bucket', 20480],
      ['inline policies of role {"Ref":"R"}', 10240],
    ]);
  });

  it('fails synth naming the template, the policy, its size and the limit', () => {
    const app = new App();
    const stack = new Stack(app, 'crowded');
    const role = new iam.Role(stack, 'Role', { assumedBy: new iam.AccountRootPrincipal() });
    new iam.ManagedPolicy(stack, 'Big', { roles: [role], statements: [new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: roleArns(90) })] });
    new s3.Bucket(stack, 'Bucket');
    addPolicySizeLimit(app);
    expect(() => app.synth()).toThrow(/crowded\.template\.json: AWS::IAM::ManagedPolicy Big\w* is \d+ characters; the limit is 6144[\s\S]*split the fleet across pipelines/);
  });

  it('lets the example pipeline through (checked by every synth of the example fleet)', () => {
    const app = new App();
    const stack = new Stack(app, 'fine');
    new iam.Role(stack, 'Role', { assumedBy: new iam.AccountRootPrincipal() }).addToPolicy(new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: roleArns(10) }));
    addPolicySizeLimit(app);
    expect(() => app.synth()).not.toThrow();
  });
});
