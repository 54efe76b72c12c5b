import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { regionPartition } from '../../../lib/domain/fleet';
import { DefaultStackSynthesizer } from 'aws-cdk-lib';
import { CDK_BOOTSTRAP_QUALIFIER } from '../../../lib/domain/names';
import { deployRoleArn, protectCommands, ProtectTarget } from '../../../lib/runtime/pipeline/protect';
import { partitionFunction } from '../../../lib/runtime/pipeline/shell';
import { runWithFakeAws } from '../../support/fake-aws';

const targets: ProtectTarget[] = [
  { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1' },
  { stackName: 'orders-cell-us-2', account: '333333333335', region: 'us-east-1' },
];

/** No wait between a change's attempts: the tests own the clock. */
const NOW = { ...process.env, protect_wait: '0' };

/** Runs the protect commands with a fake `aws` that logs its calls; `failOn` makes a call fail. */
function protect(failOn?: string) {
  return runWithFakeAws(
    protectCommands(targets),
    {
      first: failOn ? [`if [[ "$*" == *${JSON.stringify(failOn)}* ]]; then echo "An error occurred (AccessDenied)" >&2; exit 254; fi`] : [],
      otherwise: 'echo "{}"',
    },
    NOW,
  );
}
const changes = (calls: readonly string[]) => calls.filter((c) => !/^(cloudformation describe-stacks|elbv2 describe-|rds describe-)/.test(c));

describe('protectCommands (CodePipeline ignores terminationProtection: the pipeline sets it after the deploy)', () => {
  it("enables termination protection on each stack through its environment's CDK deploy role", () => {
    const result = protect();
    expect(result.status).toBe(0);
    expect(result.calls.filter((c) => c.startsWith('cloudformation describe-stacks'))).toHaveLength(2);
    expect(changes(result.calls)).toEqual([
      expect.stringMatching(
        /^sts assume-role --role-arn arn:aws:iam::333333333332:role\/cdk-hnb659fds-deploy-role-333333333332-eu-west-1 .*key=none$/,
      ),
      expect.stringMatching(
        /^cloudformation update-termination-protection --region eu-west-1 --enable-termination-protection --stack-name orders-cell-eu-2 \| key=KEY-333333333332$/,
      ),
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333335:role\/cdk-hnb659fds-deploy-role-333333333335-us-east-1 /),
      expect.stringMatching(
        /^cloudformation update-termination-protection --region us-east-1 --enable-termination-protection --stack-name orders-cell-us-2 \| key=KEY-333333333335$/,
      ),
    ]);
    expect(result.out).toContain('protect: orders-cell-us-2 (333333333335/us-east-1) is termination-protected');
  });

  it('fails the step, naming the stack, when protection cannot be set', () => {
    const result = protect('update-termination-protection --region eu-west-1');
    expect(result.status).toBe(1);
    // Tried four times, each failure with AWS's answer, then the step fails naming the stack.
    expect(result.calls.filter((c) => c.includes('update-termination-protection --region eu-west-1'))).toHaveLength(4);
    expect(result.out).toContain('protect: termination protection on orders-cell-eu-2: attempt 4 of 4 failed: An error occurred (AccessDenied)');
    expect(result.out).toContain('cannot enable termination protection on orders-cell-eu-2 in 333333333332/eu-west-1');
    expect(result.calls.some((c) => c.includes('orders-cell-us-2'))).toBe(false);
  });

  it('fails, naming the bootstrap, when the deploy role cannot be assumed', () => {
    const result = protect('deploy-role-333333333332');
    expect(result.status).toBe(1);
    expect(result.out).toContain('is 333333333332/eu-west-1 bootstrapped trusting the tooling account?');
  });

  it('switches deletion protection on for the load balancers and the database of a stack with a protector role, through that role', () => {
    const withDatabase = (type: string) =>
      runWithFakeAws(
        protectCommands([
          { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1', deletionProtectorRole: 'orders-eu-2-protector' },
          { stackName: 'orders-router-eu-west-1-groups', account: '222222222222', region: 'eu-west-1' },
        ]),
        {
          first: [
            'if [ "$2" = list-stack-resources ]; then printf "AWS::ElasticLoadBalancingV2::LoadBalancer\\tarn:aws:elasticloadbalancing:eu-west-1:333333333332:loadbalancer/app/alb/1\\n' +
              'AWS::ElasticLoadBalancingV2::LoadBalancer\\tarn:aws:elasticloadbalancing:eu-west-1:333333333332:loadbalancer/net/nlb/2\\n' +
              (type === 'aurora'
                ? 'AWS::RDS::DBCluster\\tcell-db-cluster\\nAWS::RDS::DBInstance\\tcell-db-writer\\nAWS::RDS::DBInstance\\tcell-db-reader\\n'
                : 'AWS::RDS::DBInstance\\tcell-db\\n') +
              '"; exit 0; fi',
            'if [[ "$*" == *"role/orders-eu-2-protector"* ]]; then echo "PKEY SECRET TOKEN"; exit 0; fi',
          ],
          otherwise: 'echo "{}"',
        },
        NOW,
      );
    const aurora = withDatabase('aurora');
    expect(aurora.status).toBe(0);
    expect(changes(aurora.calls).slice(1)).toEqual([
      expect.stringMatching(/^cloudformation update-termination-protection --region eu-west-1 .*orders-cell-eu-2 \| key=KEY-333333333332$/),
      expect.stringMatching(
        /^cloudformation list-stack-resources --region eu-west-1 --stack-name orders-cell-eu-2 --query StackResourceSummaries\[\?ResourceType=='AWS::ElasticLoadBalancingV2::LoadBalancer' \|\| ResourceType=='AWS::RDS::DBCluster' \|\| ResourceType=='AWS::RDS::DBInstance'\]\.\[ResourceType,PhysicalResourceId\] --output text \| key=KEY-333333333332$/,
      ),
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333332:role\/orders-eu-2-protector /),
      'elbv2 modify-load-balancer-attributes --load-balancer-arn arn:aws:elasticloadbalancing:eu-west-1:333333333332:loadbalancer/app/alb/1 --attributes Key=deletion_protection.enabled,Value=true --region eu-west-1 | key=PKEY',
      'elbv2 modify-load-balancer-attributes --load-balancer-arn arn:aws:elasticloadbalancing:eu-west-1:333333333332:loadbalancer/net/nlb/2 --attributes Key=deletion_protection.enabled,Value=true --region eu-west-1 | key=PKEY',
      // Aurora: a setting of the cluster; its instances are not modified.
      'rds modify-db-cluster --db-cluster-identifier cell-db-cluster --deletion-protection --apply-immediately --region eu-west-1 | key=PKEY',
      expect.stringMatching(/^sts assume-role .*deploy-role-222222222222-eu-west-1 /),
      expect.stringMatching(
        /^cloudformation update-termination-protection --region eu-west-1 .*orders-router-eu-west-1-groups \| key=KEY-222222222222$/,
      ),
    ]);
    const rdsInstance = withDatabase('instance');
    expect(rdsInstance.calls).toContain(
      'rds modify-db-instance --db-instance-identifier cell-db --deletion-protection --apply-immediately --region eu-west-1 | key=PKEY',
    );
    expect(rdsInstance.out).toContain('protect: orders-cell-eu-2: deletion protection on cell-db');
  });

  it('fails, naming the resource, when deletion protection cannot be switched on', () => {
    const result = runWithFakeAws(
      protectCommands([
        { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1', deletionProtectorRole: 'orders-eu-2-protector' },
      ]),
      {
        first: [
          'if [ "$2" = list-stack-resources ]; then printf "AWS::RDS::DBCluster\\tcell-db-cluster\\n"; exit 0; fi',
          'if [ "$1" = rds ]; then echo "An error occurred (AccessDenied)" >&2; exit 254; fi',
        ],
        otherwise: 'echo "{}"',
      },
      NOW,
    );
    expect(result.status).toBe(1);
    expect(result.out).toContain('cannot enable deletion protection on cell-db-cluster of orders-cell-eu-2 in 333333333332/eu-west-1');
  });

  it('skips what is already protected: a re-run after a partial failure changes nothing', () => {
    const result = runWithFakeAws(
      protectCommands([
        { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1', deletionProtectorRole: 'orders-eu-2-protector' },
      ]),
      {
        first: [
          'if [ "$2" = describe-stacks ]; then echo True; exit 0; fi',
          'if [[ "$*" == *"role/orders-eu-2-protector"* ]]; then echo "PKEY SECRET TOKEN"; exit 0; fi',
          'if [ "$2" = list-stack-resources ]; then printf "AWS::ElasticLoadBalancingV2::LoadBalancer\\tarn:aws:elasticloadbalancing:eu-west-1:333333333332:loadbalancer/app/alb/1\\nAWS::RDS::DBCluster\\tcell-db-cluster\\n"; exit 0; fi',
          'if [ "$2" = describe-load-balancer-attributes ]; then echo true; exit 0; fi',
          'if [ "$2" = describe-db-clusters ]; then echo True; exit 0; fi',
        ],
        otherwise: 'echo "{}"',
      },
      NOW,
    );
    expect(result.status).toBe(0);
    expect(result.calls.filter((c) => /update-termination-protection|modify-/.test(c))).toEqual([]);
    expect(result.out).toContain('protect: orders-cell-eu-2 (333333333332/eu-west-1) is already termination-protected');
    expect(result.out).toContain('protect: orders-cell-eu-2: cell-db-cluster already has deletion protection');
    // The checks read through the roles that would make the change.
    expect(result.calls).toContainEqual(expect.stringMatching(/^rds describe-db-clusters --db-cluster-identifier cell-db-cluster .* \| key=PKEY$/));
  });

  it('retries a change that fails for a while (a database still modifying after its deploy) and goes on', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'protect-retry-'));
    const result = runWithFakeAws(
      protectCommands([
        { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1', deletionProtectorRole: 'orders-eu-2-protector' },
      ]),
      {
        first: [
          'if [ "$2" = list-stack-resources ]; then printf "AWS::RDS::DBCluster\\tcell-db-cluster\\n"; exit 0; fi',
          'if [[ "$*" == *"role/orders-eu-2-protector"* ]]; then echo "PKEY SECRET TOKEN"; exit 0; fi',
          // Two refusals, then the change goes through.
          `if [ "$2" = modify-db-cluster ]; then n=$(cat ${dir}/n 2>/dev/null || echo 0); echo $((n + 1)) > ${dir}/n; if [ "$n" -lt 2 ]; then echo "An error occurred (InvalidDBClusterStateFault): DB cluster is not available for modification with status modifying" >&2; exit 254; fi; fi`,
        ],
        otherwise: 'echo "{}"',
      },
      NOW,
    );
    fs.rmSync(dir, { recursive: true, force: true });
    expect(result.status).toBe(0);
    expect(result.calls.filter((c) => c.startsWith('rds modify-db-cluster'))).toHaveLength(3);
    expect(result.out).toContain(
      'protect: deletion protection on cell-db-cluster: attempt 2 of 4 failed: An error occurred (InvalidDBClusterStateFault)',
    );
    expect(result.out).toContain('protect: orders-cell-eu-2: deletion protection on cell-db-cluster');
  });

  it('names the deploy role by the bootstrap qualifier', () => {
    expect(deployRoleArn('123456789012', 'eu-west-1')).toBe('arn:aws:iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-eu-west-1');
    // The CLI may not load CDK: the qualifier is the domain's, and it is CDK's default.
    expect(CDK_BOOTSTRAP_QUALIFIER).toBe(DefaultStackSynthesizer.DEFAULT_QUALIFIER);
    expect(deployRoleArn('123456789012', 'eu-west-1', 'custom')).toBe('arn:aws:iam::123456789012:role/cdk-custom-deploy-role-123456789012-eu-west-1');
    // In the region's partition.
    expect(deployRoleArn('123456789012', 'us-gov-west-1')).toBe(
      'arn:aws-us-gov:iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-us-gov-west-1',
    );
    expect(deployRoleArn('123456789012', 'cn-north-1')).toBe('arn:aws-cn:iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-cn-north-1');
    expect(protectCommands([])).toEqual([]);
  });

  it('stage_partition in the scripts answers what regionPartition does, for every partition', () => {
    for (const region of ['eu-west-1', 'cn-north-1', 'us-gov-west-1', 'us-isob-east-1', 'us-iso-east-1', 'eu-isoe-west-1']) {
      const shell = execFileSync('bash', ['--norc', '-c', [...partitionFunction(), `stage_partition ${region}`].join('\n')], {
        encoding: 'utf8',
      }).trim();
      expect([region, shell]).toEqual([region, regionPartition(region)]);
    }
  });
});
