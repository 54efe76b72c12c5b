import { deployRoleArn, protectCommands, ProtectTarget } from '../../lib/pipeline';
import { runWithFakeAws } from '../support/fake-aws';

const targets: ProtectTarget[] = [
  { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1' },
  { stackName: 'orders-cell-us-2', account: '333333333335', region: 'us-east-1' },
];

/** Runs the protect commands with a fake `aws` that logs its calls; `failOn` makes a call fail. */
function protect(failOn?: string) {
  return runWithFakeAws(protectCommands(targets), {
    first: failOn ? [`if [[ "$*" == *${JSON.stringify(failOn)}* ]]; then echo "An error occurred (AccessDenied)" >&2; exit 254; fi`] : [],
    otherwise: 'echo "{}"',
  });
}

describe('protectCommands (CodePipeline ignores terminationProtection: the pipeline sets it after the deploy)', () => {
  it("enables termination protection on each stack through its environment's CDK deploy role", () => {
    const result = protect();
    expect(result.status).toBe(0);
    expect(result.calls).toEqual([
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333332:role\/cdk-hnb659fds-deploy-role-333333333332-eu-west-1 .*key=none$/),
      expect.stringMatching(/^cloudformation update-termination-protection --region eu-west-1 --enable-termination-protection --stack-name orders-cell-eu-2 \| key=KEY-333333333332$/),
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333335:role\/cdk-hnb659fds-deploy-role-333333333335-us-east-1 /),
      expect.stringMatching(/^cloudformation update-termination-protection --region us-east-1 --enable-termination-protection --stack-name orders-cell-us-2 \| key=KEY-333333333335$/),
    ]);
    expect(result.out).toContain('protect: orders-cell-us-2 (333333333335/us-east-1) is termination-protected');
  });

  it('fails the step, naming the stack, when protection cannot be set', () => {
    const result = protect('update-termination-protection --region eu-west-1');
    expect(result.status).toBe(1);
    expect(result.out).toContain('cannot enable termination protection on orders-cell-eu-2 in 333333333332/eu-west-1');
    expect(result.calls.some((c) => c.includes('orders-cell-us-2'))).toBe(false);
  });

  it('fails, naming the bootstrap, when the deploy role cannot be assumed', () => {
    const result = protect('deploy-role-333333333332');
    expect(result.status).toBe(1);
    expect(result.out).toContain('is 333333333332/eu-west-1 bootstrapped trusting the tooling account?');
  });

  it('names the deploy role by the bootstrap qualifier', () => {
    expect(deployRoleArn('123456789012', 'eu-west-1')).toBe('arn:aws:iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-eu-west-1');
    expect(deployRoleArn('123456789012', 'eu-west-1', 'custom')).toBe('arn:aws:iam::123456789012:role/cdk-custom-deploy-role-123456789012-eu-west-1');
    expect(protectCommands([])).toEqual([]);
  });
});
