import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { failedCreateCommands, FAILED_CREATE_RUNBOOK, ProtectTarget } from '../../../lib/constructs/pipeline';
import { REPO_ROOT } from '../../support/fleet';
import { fakeStackStatuses, runWithFakeAws } from '../../support/fake-aws';

const targets: ProtectTarget[] = [
  { stackName: 'orders-cell-eu-2', account: '333333333332', region: 'eu-west-1' },
  { stackName: 'orders-cell-us-2', account: '333333333335', region: 'us-east-1' },
];

/**
 * Runs the step against a fake CloudFormation: `statuses[stack]` is what describe-stacks answers,
 * call after call (the last answer repeats; `NONE` is "does not exist"); delete-stack succeeds unless
 * `failDelete`.
 */
function run(statuses: Record<string, string[]>, options: { failDelete?: boolean; waitSeconds?: number } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'failed-create-'));
  try {
    const first = fakeStackStatuses(dir, statuses, options.failDelete);
    return runWithFakeAws(failedCreateCommands(targets, { pollSeconds: 0, waitSeconds: options.waitSeconds ?? 60 }), { first, otherwise: 'exit 0' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const cfnCalls = (calls: string[]) => calls.filter((c) => c.startsWith('cloudformation')).map((c) => c.replace(/ --query .*? \|/, ' |'));

describe('failedCreateCommands (before each stage: a stack whose first create failed is deleted so the deploy can create it again)', () => {
  it('deletes a stack in ROLLBACK_COMPLETE through its deploy role, waits until it is gone, and leaves a created stack alone', () => {
    const result = run({
      'orders-cell-eu-2': ['ROLLBACK_COMPLETE False', 'DELETE_IN_PROGRESS False', 'NONE'],
      'orders-cell-us-2': ['UPDATE_COMPLETE True'],
    });
    expect(result.status).toBe(0);
    expect(result.calls[0]).toMatch(/^sts assume-role --role-arn arn:aws:iam::333333333332:role\/cdk-hnb659fds-deploy-role-333333333332-eu-west-1 /);
    expect(cfnCalls(result.calls)).toEqual([
      'cloudformation describe-stacks --region eu-west-1 --stack-name orders-cell-eu-2 | key=KEY-333333333332',
      'cloudformation delete-stack --region eu-west-1 --stack-name orders-cell-eu-2 | key=KEY-333333333332',
      'cloudformation describe-stacks --region eu-west-1 --stack-name orders-cell-eu-2 | key=KEY-333333333332',
      'cloudformation describe-stacks --region eu-west-1 --stack-name orders-cell-eu-2 | key=KEY-333333333332',
      'cloudformation describe-stacks --region us-east-1 --stack-name orders-cell-us-2 | key=KEY-333333333335',
    ]);
    expect(result.out).toContain(
      'orders-cell-eu-2 (333333333332/eu-west-1) is ROLLBACK_COMPLETE: its first create failed and it never served; deleting it',
    );
    expect(result.out).toContain('orders-cell-eu-2 (333333333332/eu-west-1) deleted; the deploy creates it again');
    expect(result.out).toContain('orders-cell-us-2 (333333333335/us-east-1) is UPDATE_COMPLETE; nothing to clear');
  });

  it('never deletes a stack that completed a create, whatever state it is in now', () => {
    for (const status of [
      'CREATE_COMPLETE',
      'UPDATE_COMPLETE',
      'UPDATE_ROLLBACK_COMPLETE',
      'UPDATE_ROLLBACK_FAILED',
      'UPDATE_FAILED',
      'IMPORT_ROLLBACK_COMPLETE',
    ]) {
      const result = run({ 'orders-cell-eu-2': [`${status} True`], 'orders-cell-us-2': [`${status} False`] });
      expect(result.calls.filter((c) => c.includes('delete-stack'))).toEqual([]);
      expect(result.status).toBe(0);
    }
  });

  it('passes over a stack that does not exist yet (the deploy creates it)', () => {
    const result = run({ 'orders-cell-eu-2': ['NONE'], 'orders-cell-us-2': ['NONE'] });
    expect(result.status).toBe(0);
    expect(result.out).toContain('orders-cell-us-2 (333333333335/us-east-1) does not exist yet; the deploy creates it');
  });

  it('waits for a create still rolling back (an earlier execution was stopped), then deletes it; ROLLBACK_FAILED is deleted too', () => {
    const result = run({
      'orders-cell-eu-2': ['CREATE_IN_PROGRESS False', 'ROLLBACK_IN_PROGRESS False', 'ROLLBACK_COMPLETE False', 'NONE'],
      'orders-cell-us-2': ['ROLLBACK_FAILED False', 'NONE'],
    });
    expect(result.status).toBe(0);
    expect(result.calls.filter((c) => c.includes('delete-stack')).map((c) => c.split(' | ')[0])).toEqual([
      'cloudformation delete-stack --region eu-west-1 --stack-name orders-cell-eu-2',
      'cloudformation delete-stack --region us-east-1 --stack-name orders-cell-us-2',
    ]);
    expect(result.out).toContain('orders-cell-eu-2 (333333333332/eu-west-1) is ROLLBACK_IN_PROGRESS; waiting for it to settle');
  });

  it('fails the stage, naming the runbook, when the delete fails, cannot be asked for, or the stack stays stuck', () => {
    const failed = run({
      'orders-cell-eu-2': ['ROLLBACK_COMPLETE False', 'DELETE_IN_PROGRESS False', 'DELETE_FAILED False'],
      'orders-cell-us-2': ['NONE'],
    });
    expect(failed.status).toBe(1);
    expect(failed.out).toContain(
      `orders-cell-eu-2 (333333333332/eu-west-1) is DELETE_FAILED: CloudFormation could not delete a resource of it; see ${FAILED_CREATE_RUNBOOK}`,
    );
    expect(failed.calls.some((c) => c.includes('orders-cell-us-2'))).toBe(false);

    const refused = run({ 'orders-cell-eu-2': ['ROLLBACK_COMPLETE False'], 'orders-cell-us-2': ['NONE'] }, { failDelete: true });
    expect(refused.status).toBe(1);
    expect(refused.out).toContain(`cannot delete orders-cell-eu-2 in 333333333332/eu-west-1; see ${FAILED_CREATE_RUNBOOK}`);

    const stuck = run({ 'orders-cell-eu-2': ['DELETE_IN_PROGRESS False'], 'orders-cell-us-2': ['NONE'] }, { waitSeconds: 0 });
    expect(stuck.status).toBe(1);
    expect(stuck.out).toContain('orders-cell-eu-2 (333333333332/eu-west-1) is still DELETE_IN_PROGRESS after 0s');
  });

  it('refuses a termination-protected failed create (protected by hand) and a stack it cannot read', () => {
    const protectedStack = run({ 'orders-cell-eu-2': ['ROLLBACK_COMPLETE True'], 'orders-cell-us-2': ['NONE'] });
    expect(protectedStack.status).toBe(1);
    expect(protectedStack.out).toContain('is ROLLBACK_COMPLETE and termination-protected');
    expect(protectedStack.calls.some((c) => c.includes('delete-stack'))).toBe(false);

    const unreadable = run({ 'orders-cell-eu-2': ['ERROR'], 'orders-cell-us-2': ['NONE'] });
    expect(unreadable.status).toBe(1);
    expect(unreadable.out).toContain('cannot read orders-cell-eu-2 in 333333333332/eu-west-1');
  });

  it('names a runbook that exists', () => {
    expect(fs.existsSync(path.join(REPO_ROOT, FAILED_CREATE_RUNBOOK))).toBe(true);
    expect(failedCreateCommands([])).toEqual([]);
    expect(() => failedCreateCommands(targets, { pollSeconds: -1 })).toThrow('pollSeconds -1 must be a whole number of seconds >= 0');
  });
});
