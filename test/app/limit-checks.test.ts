import { CfnResource, NestedStack, Stack, Stage } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import { addLimitChecks } from '../../lib/app';
import { cdkApp } from '../support/fleet';

const roleArns = (n: number) => Array.from({ length: n }, (_, i) => `arn:aws:iam::${String(100000000000 + i)}:role/orders-cell-${i}-mover-launcher`);

describe('AwsLimitChecks: synth fails where AWS would refuse the deploy', () => {
  it('names the stack, the resource, its size, the limit with its page, and the fix', () => {
    const app = cdkApp();
    const stack = new Stack(app, 'crowded');
    const role = new iam.Role(stack, 'Role', { assumedBy: new iam.AccountRootPrincipal() });
    new iam.ManagedPolicy(stack, 'Big', {
      roles: [role],
      statements: [new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: roleArns(150) })],
    });
    addLimitChecks(app);
    expect(() => app.synth()).toThrow(
      /ERROR crowded: Big\w+ policy document is \d{4} characters; IAM managed policy document \(whitespace not counted\) is at most 6144 \(https:\/\/docs\.aws\.amazon\.com\/IAM\/latest\/UserGuide\/reference_iam-quotas\.html\) \(AwsLimits\)[\s\S]*Suggested fix: grant by name pattern bounded by the organization/,
    );
  });

  it("counts the interface endpoints nested stacks put in their parent's VPC against the quota declared", () => {
    const build = (quota?: number) => {
      const app = cdkApp();
      const stack = new Stack(app, 'router', { env: { account: '222222222222', region: 'eu-west-1' } });
      const vpc = new ec2.Vpc(stack, 'Vpc', {
        maxAzs: 2,
        natGateways: 0,
        subnetConfiguration: [{ name: 'p', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }],
      });
      for (const part of [0, 1]) {
        const nested = new NestedStack(stack, `Links${part}`);
        for (let i = 0; i < 30; i++) {
          new ec2.InterfaceVpcEndpoint(nested, `Cell${i}`, {
            vpc,
            service: new ec2.InterfaceVpcEndpointService(`com.amazonaws.vpce.eu-west-1.vpce-svc-${part}${i}`),
            privateDnsEnabled: false,
          });
        }
      }
      addLimitChecks(app, quota === undefined ? {} : { interfaceEndpointsPerVpc: quota });
      return app;
    };
    expect(() => build().synth()).toThrow(
      /ERROR router: VPC Vpc\w+ interface endpoints is 60 count; interface and Gateway Load Balancer endpoints per VPC is at most 50 \(the quota declared; adjustable\)/,
    );
    expect(() => build(60).synth()).not.toThrow();
  });

  it("holds a stack inside a Stage (a pipeline stage's) to the CloudFormation action's template size, and a stack of the app to CloudFormation's", () => {
    const build = (staged: boolean) => {
      const app = cdkApp();
      const scope = staged ? new Stage(app, 'routers-eu-west-1') : app;
      const stack = new Stack(scope, 'router');
      // About 600 KB of template: over the action's 512,000 bytes, under CloudFormation's 1 MB.
      for (let i = 0; i < 60; i++)
        new CfnResource(stack, `Handle${i}`, { type: 'AWS::CloudFormation::WaitConditionHandle' }).addMetadata('note', 'x'.repeat(10_000));
      addLimitChecks(app);
      return app;
    };
    expect(() => build(true).synth()).toThrow(
      /ERROR routers-eu-west-1\/router: template body is 6\d{5} bytes; template a CodePipeline CloudFormation deploy action is reported to accept/,
    );
    expect(() => build(false).synth()).not.toThrow();
  });

  it('lets templates within every limit through', () => {
    const app = cdkApp();
    new CfnResource(new Stack(app, 'small'), 'Topic', { type: 'AWS::SNS::Topic' });
    addLimitChecks(app);
    expect(() => app.synth()).not.toThrow();
  });
});
