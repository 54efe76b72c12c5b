import { bootstrapCommands } from '../../lib/accounts';

describe('bootstrapCommands', () => {
  it('bootstraps each account and region once, trusting the tooling account with the execution policy', () => {
    const commands = bootstrapCommands(
      [{ id: 'a', account: '111111111111', region: 'eu-west-1' }, { id: 'b', account: '222222222222', region: 'us-east-1' }, { id: 'c', account: '111111111111', region: 'eu-west-1' }],
      { toolingAccount: '999999999999', executionPolicyArn: 'arn:aws:iam::999999999999:policy/cdk-cell-exec' },
    );
    expect(commands.map((c) => c.argv.join(' '))).toEqual([
      'cdk bootstrap aws://111111111111/eu-west-1 --trust 999999999999 --trust-for-lookup 999999999999 --cloudformation-execution-policies arn:aws:iam::999999999999:policy/cdk-cell-exec',
      'cdk bootstrap aws://222222222222/us-east-1 --trust 999999999999 --trust-for-lookup 999999999999 --cloudformation-execution-policies arn:aws:iam::999999999999:policy/cdk-cell-exec',
    ]);
  });
});
