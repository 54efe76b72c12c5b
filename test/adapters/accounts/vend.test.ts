import {
  CreateAccountCommand,
  DescribeCreateAccountStatusCommand,
  ListAccountsCommand,
  ListParentsCommand,
  MoveAccountCommand,
  OrganizationsClient,
  TooManyRequestsException,
  ConcurrentModificationException,
  AccessDeniedException,
} from '@aws-sdk/client-organizations';
import { mockClient } from 'aws-sdk-client-mock';
import { ensureAccounts, MissingPermissionError, VendOptions, VendTarget } from '../../../lib/adapters/accounts';
import { AccountsFile } from '../../../lib/domain/fleet';

const OU = 'ou-ab12-cells001';
const ROOT = 'r-ab12';
const org = mockClient(OrganizationsClient);
const target = (cell: string): VendTarget => ({ cell, accountName: `orders-${cell}`, email: `aws+orders-${cell}@example.com` });
const exception = <T>(Ctor: new (o: { message: string; $metadata: object }) => T, message: string) => new Ctor({ message, $metadata: {} });

/** In-memory accounts file that records every write, as the atomic writer would persist it. */
function memoryFile(initial: AccountsFile['cells'] = {}) {
  let current: AccountsFile = { schemaVersion: 1, cells: initial };
  const writes: AccountsFile[] = [];
  return {
    writes,
    get current() {
      return current;
    },
    handle: {
      read: () => current,
      write: (file: AccountsFile) => {
        current = JSON.parse(JSON.stringify(file));
        writes.push(current);
      },
    },
  };
}

function options(file: ReturnType<typeof memoryFile>, extra: Partial<VendOptions> = {}): VendOptions & { slept: number[]; lines: string[] } {
  const slept: number[] = [];
  const lines: string[] = [];
  return {
    app: 'orders',
    organizationalUnitId: OU,
    roleName: 'OrganizationAccountAccessRole',
    pollDelayMs: 1000,
    sleep: async (ms) => {
      slept.push(ms);
    },
    progress: (l) => lines.push(l),
    file: file.handle,
    slept,
    lines,
    ...extra,
  };
}

beforeEach(() => {
  org.reset();
  org.on(ListAccountsCommand).resolves({ Accounts: [] });
  org.on(ListParentsCommand).resolves({ Parents: [{ Id: ROOT, Type: 'ROOT' }] });
  org.on(MoveAccountCommand).resolves({});
});

describe('ensureAccounts', () => {
  it('creates an account, polls with backoff until SUCCEEDED, moves it into the OU, records each step', async () => {
    org.on(CreateAccountCommand).resolves({ CreateAccountStatus: { Id: 'car-1111', State: 'IN_PROGRESS', AccountName: 'orders-eu-1' } });
    org
      .on(DescribeCreateAccountStatusCommand)
      .resolvesOnce({ CreateAccountStatus: { Id: 'car-1111', State: 'IN_PROGRESS' } })
      .resolvesOnce({ CreateAccountStatus: { Id: 'car-1111', State: 'IN_PROGRESS' } })
      .resolves({ CreateAccountStatus: { Id: 'car-1111', State: 'SUCCEEDED', AccountId: '123456789012' } });
    const file = memoryFile();
    const opts = options(file);
    const results = await ensureAccounts(new OrganizationsClient({}), [target('eu-1')], opts);
    expect(results).toEqual([{ cell: 'eu-1', action: 'created', accountId: '123456789012' }]);
    expect(org.commandCalls(CreateAccountCommand)[0].args[0].input).toEqual({
      AccountName: 'orders-eu-1',
      Email: 'aws+orders-eu-1@example.com',
      RoleName: 'OrganizationAccountAccessRole',
      IamUserAccessToBilling: 'DENY',
      Tags: [
        { Key: 'cell', Value: 'eu-1' },
        { Key: 'app', Value: 'orders' },
      ],
    });
    expect(opts.slept).toEqual([1000, 2000]);
    expect(org.commandCalls(MoveAccountCommand)[0].args[0].input).toEqual({
      AccountId: '123456789012',
      SourceParentId: ROOT,
      DestinationParentId: OU,
    });
    expect(file.writes.map((w) => w.cells['eu-1'].status)).toEqual(['CREATING', 'CREATED', 'ACTIVE']);
    expect(file.writes[0].cells['eu-1'].createAccountRequestId).toBe('car-1111');
    expect(file.current.cells['eu-1']).toMatchObject({ accountId: '123456789012', organizationalUnit: OU, status: 'ACTIVE' });
  });

  it('adopts an account found by email on a later page instead of creating a duplicate', async () => {
    org
      .on(ListAccountsCommand)
      .resolvesOnce({ Accounts: [{ Id: '111111111111', Email: 'someone@example.com' }], NextToken: 'page-2' })
      .resolvesOnce({ Accounts: [{ Id: '222222222222', Email: 'AWS+orders-eu-2@example.com' }] });
    org.on(ListParentsCommand).resolves({ Parents: [{ Id: OU, Type: 'ORGANIZATIONAL_UNIT' }] });
    const file = memoryFile();
    const results = await ensureAccounts(new OrganizationsClient({}), [target('eu-2')], options(file));
    expect(results).toEqual([{ cell: 'eu-2', action: 'adopted', accountId: '222222222222' }]);
    expect(org.commandCalls(ListAccountsCommand).map((c) => c.args[0].input.NextToken)).toEqual([undefined, 'page-2']);
    expect(org.commandCalls(CreateAccountCommand)).toHaveLength(0);
    expect(org.commandCalls(MoveAccountCommand)).toHaveLength(0);
    expect(file.current.cells['eu-2']).toMatchObject({ accountId: '222222222222', status: 'ACTIVE', organizationalUnit: OU });
  });

  it('resumes an interrupted run from the recorded request id', async () => {
    org.on(DescribeCreateAccountStatusCommand).resolves({ CreateAccountStatus: { Id: 'car-2222', State: 'SUCCEEDED', AccountId: '333333333333' } });
    const file = memoryFile({ 'eu-3': { createAccountRequestId: 'car-2222', status: 'CREATING' } });
    const results = await ensureAccounts(new OrganizationsClient({}), [target('eu-3')], options(file));
    expect(results).toEqual([{ cell: 'eu-3', action: 'resumed', accountId: '333333333333' }]);
    expect(org.commandCalls(CreateAccountCommand)).toHaveLength(0);
    expect(org.commandCalls(DescribeCreateAccountStatusCommand)[0].args[0].input).toEqual({ CreateAccountRequestId: 'car-2222' });
  });

  it('leaves recorded accounts alone, and moves one that is not in the OU yet', async () => {
    const file = memoryFile({
      'eu-1': { accountId: '123456789012', status: 'ACTIVE', organizationalUnit: OU },
      'eu-2': { accountId: '210987654321', status: 'CREATED' },
    });
    const results = await ensureAccounts(new OrganizationsClient({}), [target('eu-1'), target('eu-2')], options(file));
    expect(results.map((r) => r.action)).toEqual(['existing', 'moved']);
    expect(org.commandCalls(ListParentsCommand)).toHaveLength(1);
  });

  it('retries throttling and concurrent modification with exponential backoff', async () => {
    org
      .on(CreateAccountCommand)
      .rejectsOnce(
        exception(TooManyRequestsException, "AWS Organizations can't complete your request because another request is already in progress"),
      )
      .rejectsOnce(exception(ConcurrentModificationException, 'concurrent'))
      .resolves({ CreateAccountStatus: { Id: 'car-3', State: 'IN_PROGRESS' } });
    org.on(DescribeCreateAccountStatusCommand).resolves({ CreateAccountStatus: { Id: 'car-3', State: 'SUCCEEDED', AccountId: '444444444444' } });
    const file = memoryFile();
    const opts = options(file);
    const results = await ensureAccounts(new OrganizationsClient({}), [target('eu-4')], opts);
    expect(results[0].action).toBe('created');
    expect(opts.slept).toEqual([1000, 2000]);
    expect(opts.lines.filter((l) => l.startsWith('CreateAccount: '))).toEqual([
      'CreateAccount: TooManyRequestsException, retrying in 1s (attempt 2/8)',
      'CreateAccount: ConcurrentModificationException, retrying in 2s (attempt 3/8)',
    ]);
  });

  it.each([
    ['EMAIL_ALREADY_EXISTS', /EMAIL_ALREADY_EXISTS: the email belongs to an account outside this organization/],
    ['ACCOUNT_LIMIT_EXCEEDED', /ACCOUNT_LIMIT_EXCEEDED: the organization has reached its account quota/],
    ['CONCURRENT_ACCOUNT_MODIFICATION', /CONCURRENT_ACCOUNT_MODIFICATION: another account change was in progress/],
    ['INVALID_EMAIL', /INVALID_EMAIL: the email address is invalid/],
    ['INTERNAL_FAILURE', /^INTERNAL_FAILURE$/],
  ])('reports a FAILED creation (%s) for that cell and carries on with the others', async (reason, message) => {
    org.on(CreateAccountCommand, { Email: 'aws+orders-bad@example.com' }).resolves({ CreateAccountStatus: { Id: 'car-bad', State: 'IN_PROGRESS' } });
    org
      .on(CreateAccountCommand, { Email: 'aws+orders-good@example.com' })
      .resolves({ CreateAccountStatus: { Id: 'car-good', State: 'IN_PROGRESS' } });
    org
      .on(DescribeCreateAccountStatusCommand, { CreateAccountRequestId: 'car-bad' })
      .resolves({ CreateAccountStatus: { Id: 'car-bad', State: 'FAILED', FailureReason: reason as never } });
    org
      .on(DescribeCreateAccountStatusCommand, { CreateAccountRequestId: 'car-good' })
      .resolves({ CreateAccountStatus: { Id: 'car-good', State: 'SUCCEEDED', AccountId: '555555555555' } });
    const file = memoryFile();
    const results = await ensureAccounts(new OrganizationsClient({}), [target('bad'), target('good')], options(file));
    expect(results[0]).toEqual({ cell: 'bad', action: 'failed', reason: expect.stringMatching(message) });
    expect(results[1]).toMatchObject({ cell: 'good', action: 'created' });
    expect(file.current.cells.bad).toEqual({ email: 'aws+orders-bad@example.com', status: 'FAILED', failureReason: reason });
  });

  it('stops with a message naming the action when a permission is missing', async () => {
    org.on(ListAccountsCommand).rejects(exception(AccessDeniedException, "You don't have permissions to access this resource."));
    await expect(ensureAccounts(new OrganizationsClient({}), [target('eu-1')], options(memoryFile()))).rejects.toThrow(MissingPermissionError);
    await expect(ensureAccounts(new OrganizationsClient({}), [target('eu-1')], options(memoryFile()))).rejects.toThrow(
      /missing permission organizations:ListAccounts/,
    );
  });

  it('gives up polling after maxPollMs, keeping the request id so the next run resumes', async () => {
    org.on(CreateAccountCommand).resolves({ CreateAccountStatus: { Id: 'car-slow', State: 'IN_PROGRESS' } });
    org.on(DescribeCreateAccountStatusCommand).resolves({ CreateAccountStatus: { Id: 'car-slow', State: 'IN_PROGRESS' } });
    const file = memoryFile();
    const results = await ensureAccounts(new OrganizationsClient({}), [target('eu-5')], options(file, { maxPollMs: 5000 }));
    expect(results[0]).toEqual({
      cell: 'eu-5',
      action: 'failed',
      reason: expect.stringContaining('still in progress; run `cellctl accounts ensure` again to resume'),
    });
    expect(file.current.cells['eu-5']).toMatchObject({ createAccountRequestId: 'car-slow', status: 'CREATING' });
  });

  it('changes nothing in a dry run', async () => {
    org.on(ListAccountsCommand).resolves({ Accounts: [{ Id: '666666666666', Email: 'aws+orders-old@example.com' }] });
    const file = memoryFile({
      resumable: { createAccountRequestId: 'car-9', status: 'CREATING' },
      outside: { accountId: '777777777777', status: 'CREATED' },
    });
    const results = await ensureAccounts(
      new OrganizationsClient({}),
      [target('new'), target('old'), target('resumable'), target('outside')],
      options(file, { dryRun: true }),
    );
    expect(results.map((r) => r.action)).toEqual(['would-create', 'would-adopt', 'would-resume', 'would-move']);
    expect(file.writes).toEqual([]);
    expect(org.commandCalls(CreateAccountCommand)).toHaveLength(0);
    expect(org.commandCalls(MoveAccountCommand)).toHaveLength(0);
  });
});
