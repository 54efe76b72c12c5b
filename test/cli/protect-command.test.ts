import * as path from 'path';
import { cellctl } from '../support/cli';
import { fakeAwsCommand, FakeAwsCommand } from '../support/fake-aws';
import { REPO_ROOT } from '../support/fleet';

const CONFIG = path.join(REPO_ROOT, 'cells.config.ts');
/** No wait between a change's attempts. */
process.env.protect_wait = '0';

/**
 * `cellctl protect`: a fleet deployed with `cdk deploy` gets what the pipeline's protect step gives,
 * through the same script, the AWS CLI (a fake here) and the caller's credentials.
 */
describe('cellctl protect', () => {
  let aws: FakeAwsCommand;
  const listing = (arn: string) =>
    `if [ "$2" = list-stack-resources ]; then case "$*" in *orders-cell-*) printf "AWS::ElasticLoadBalancingV2::LoadBalancer\\t${arn}\\nAWS::RDS::DBCluster\\tdb-cluster\\nAWS::RDS::DBInstance\\tdb-writer\\n" ;; *orders-router-*) printf "AWS::ElasticLoadBalancingV2::LoadBalancer\\t${arn}\\n" ;; esac; exit 0; fi`;
  afterEach(() => aws?.remove());

  it("protects every stack of the fleet: each cell's load balancer and cluster, each router's NLB, every stack's termination", async () => {
    aws = fakeAwsCommand({ first: [listing('arn:lb')], otherwise: 'echo "{}"' });
    const ran = await cellctl('protect', '--config', CONFIG, '--aws', aws.path);
    expect(ran.err).toBe('');
    expect(ran.code).toBe(0);
    // The example: 8 cells, 2 regions with a router stack and two group stacks each.
    expect(ran.out.trim().split('\n').pop()).toBe('protected 14 stack(s)');
    const calls = aws.calls();
    const terminations = calls.filter((c) => c.startsWith('cloudformation update-termination-protection'));
    expect(terminations).toHaveLength(14);
    expect(terminations.some((c) => c.includes('--stack-name orders-router-us-east-1-groups'))).toBe(true);
    const clusters = calls.filter((c) => c.startsWith('rds modify-db-cluster'));
    expect(clusters).toHaveLength(8);
    // The cluster's instances are not changed one by one (Aurora's protection is the cluster's).
    expect(calls.filter((c) => c.startsWith('rds modify-db-instance'))).toEqual([]);
    // Each change in the stack's own account: through its protector role.
    expect(calls).toContainEqual(
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::222222222222:role\/orders-router-eu-west-1-protector /),
    );
    expect(calls.filter((c) => c.startsWith('elbv2 modify-load-balancer-attributes') && c.endsWith('key=KEY-222222222222'))).toHaveLength(2);
  });

  it('protects only the stacks named, and refuses a name that is no stack of the fleet in one line', async () => {
    aws = fakeAwsCommand({ first: [listing('arn:lb')], otherwise: 'echo "{}"' });
    const one = await cellctl('protect', '--config', CONFIG, '--aws', aws.path, '--stack', 'orders-router-eu-west-1');
    expect(one.code).toBe(0);
    expect(aws.calls().filter((c) => c.startsWith('cloudformation update-termination-protection'))).toEqual([
      expect.stringContaining('--stack-name orders-router-eu-west-1 '),
    ]);
    const bad = await cellctl('protect', '--config', CONFIG, '--aws', aws.path, '--stack', 'orders-cell-nope');
    expect(bad.code).toBe(1);
    expect(bad.err.trim().split('\n')).toHaveLength(1);
    expect(bad.err).toMatch(/^error: --stack `orders-cell-nope`: no such stack in the fleet; its stacks are orders-cell-\S+, /);
  });

  it('stops at the stack it could not protect, says that a run again goes on, and skips what is protected already', async () => {
    aws = fakeAwsCommand({
      first: [
        // Every stack is termination-protected already (cdk deploy sets it); one database refuses.
        'if [ "$2" = describe-stacks ]; then echo True; exit 0; fi',
        listing('arn:lb'),
        'if [ "$2" = modify-db-cluster ]; then echo "An error occurred (InvalidDBClusterStateFault)" >&2; exit 254; fi',
      ],
      otherwise: 'echo "{}"',
    });
    const ran = await cellctl('protect', '--config', CONFIG, '--aws', aws.path);
    expect(ran.code).toBe(1);
    expect(ran.out).toContain('is already termination-protected');
    expect(aws.calls().filter((c) => c.startsWith('cloudformation update-termination-protection'))).toEqual([]);
    expect(ran.out).toContain('protect: deletion protection on db-cluster: attempt 4 of 4 failed: An error occurred (InvalidDBClusterStateFault)');
    expect(ran.err.trim()).toBe(
      'error: protect stopped (exit 1) at the stack named above; what it protected stays protected, and running it again skips that and goes on',
    );
  });

  it("prints the script it runs (the pipeline's), with every stack of the fleet", async () => {
    const ran = await cellctl('protect', '--config', CONFIG, '--print');
    expect(ran.code).toBe(0);
    expect(ran.out.startsWith('#!/usr/bin/env bash\n')).toBe(true);
    expect(ran.out).toContain("'orders-cell-canary-eu 333333333330 eu-west-1 orders-canary-eu-protector'");
    expect(ran.out).toContain("cdk_qualifier='hnb659fds'");
    expect(ran.out).toContain('as_deploy cloudformation update-termination-protection');
  });
});
