import {
  CreateAccountCommand,
  CreateAccountState,
  DescribeCreateAccountStatusCommand,
  ListAccountsCommand,
  ListParentsCommand,
  MoveAccountCommand,
  OrganizationsClient,
} from '@aws-sdk/client-organizations';
import { AccountsFile, CellAccountRecord } from '../../domain/fleet';
import { isCredentialsError, NoCredentialsError } from '../aws';
import { MissingPermissionError, withRetry } from './retry';

/** A cell that needs an account, with the name and root email it gets. */
export interface VendTarget {
  readonly cell: string;
  readonly accountName: string;
  readonly email: string;
}

export interface VendOptions {
  readonly app: string;
  readonly organizationalUnitId: string;
  readonly roleName: string;
  /** Decide and report, change nothing (read-only calls only). */
  readonly dryRun?: boolean;
  readonly sleep: (ms: number) => Promise<void>;
  readonly progress?: (line: string) => void;
  /** First poll delay; doubles up to 30 s. @default 5000 */
  readonly pollDelayMs?: number;
  /** Give up polling one request after this long (it can be resumed later). @default 30 min */
  readonly maxPollMs?: number;
  /** Reads and writes `cells.accounts.json`; `write` is atomic and called after every step. */
  readonly file: { read(): AccountsFile; write(file: AccountsFile): void };
}

export type VendAction =
  'existing' | 'adopted' | 'created' | 'resumed' | 'moved' | 'would-adopt' | 'would-create' | 'would-resume' | 'would-move' | 'failed';

export interface VendResult {
  readonly cell: string;
  readonly action: VendAction;
  readonly accountId?: string;
  readonly reason?: string;
}

const FAILURE_HINTS: Record<string, string> = {
  EMAIL_ALREADY_EXISTS: 'the email belongs to an account outside this organization; change organization.accountEmail',
  ACCOUNT_LIMIT_EXCEEDED: 'the organization has reached its account quota; request an increase in Service Quotas',
  CONCURRENT_ACCOUNT_MODIFICATION: 'another account change was in progress; run ensure again',
  INVALID_EMAIL: 'the email address is invalid; fix organization.accountEmail',
  INVALID_ADDRESS: 'the management account has an invalid address; fix its contact information',
};

class Vendor {
  private byEmail?: Map<string, string>;

  constructor(
    private readonly org: OrganizationsClient,
    private readonly options: VendOptions,
  ) {}

  private retry<T>(action: string, run: () => Promise<T>): Promise<T> {
    return withRetry(action, run, { sleep: this.options.sleep, progress: this.options.progress });
  }

  private record(cell: string, patch: Partial<CellAccountRecord>): void {
    const file = this.options.file.read();
    this.options.file.write({ ...file, cells: { ...file.cells, [cell]: { ...file.cells[cell], ...patch } } });
  }

  /** Every account of the organization by lower-cased email, listed once per run (paginated). */
  private async accountsByEmail(): Promise<Map<string, string>> {
    if (this.byEmail) return this.byEmail;
    const found = new Map<string, string>();
    let token: string | undefined;
    do {
      const page = await this.retry('ListAccounts', () => this.org.send(new ListAccountsCommand({ NextToken: token })));
      for (const account of page.Accounts ?? []) {
        if (account.Email && account.Id) found.set(account.Email.toLowerCase(), account.Id);
      }
      token = page.NextToken;
    } while (token);
    this.byEmail = found;
    return found;
  }

  /** Polls a CreateAccount request until it ends; undefined when still running after maxPollMs. */
  private async waitFor(
    cell: string,
    requestId: string,
  ): Promise<{ state: CreateAccountState | string; accountId?: string; reason?: string } | undefined> {
    let delay = this.options.pollDelayMs ?? 5000;
    let waited = 0;
    const limit = this.options.maxPollMs ?? 30 * 60_000;
    for (;;) {
      const { CreateAccountStatus: status } = await this.retry('DescribeCreateAccountStatus', () =>
        this.org.send(new DescribeCreateAccountStatusCommand({ CreateAccountRequestId: requestId })),
      );
      const state = status?.State ?? 'IN_PROGRESS';
      if (state === CreateAccountState.SUCCEEDED) return { state, accountId: status!.AccountId };
      if (state === CreateAccountState.FAILED) return { state, reason: status!.FailureReason };
      if (waited >= limit) return undefined;
      this.options.progress?.(`${cell}: ${requestId} ${state}, checking again in ${delay / 1000}s`);
      await this.options.sleep(delay);
      waited += delay;
      delay = Math.min(delay * 2, 30_000);
    }
  }

  /** Moves the account into the OU unless it is there already. Returns true when it moved. */
  private async place(cell: string, accountId: string): Promise<boolean> {
    const { Parents } = await this.retry('ListParents', () => this.org.send(new ListParentsCommand({ ChildId: accountId })));
    const parent = Parents?.[0]?.Id;
    if (this.options.dryRun) return parent !== this.options.organizationalUnitId;
    if (parent === this.options.organizationalUnitId) {
      this.record(cell, { organizationalUnit: parent, status: 'ACTIVE' });
      return false;
    }
    await this.retry('MoveAccount', () =>
      this.org.send(
        new MoveAccountCommand({
          AccountId: accountId,
          SourceParentId: parent,
          DestinationParentId: this.options.organizationalUnitId,
        }),
      ),
    );
    this.record(cell, { organizationalUnit: this.options.organizationalUnitId, status: 'ACTIVE' });
    this.options.progress?.(`${cell}: moved ${accountId} from ${parent} to ${this.options.organizationalUnitId}`);
    return true;
  }

  private async finish(target: VendTarget, requestId: string, resumed: boolean): Promise<VendResult> {
    const outcome = await this.waitFor(target.cell, requestId);
    if (!outcome) {
      return {
        cell: target.cell,
        action: 'failed',
        reason: `request ${requestId} is still in progress; run \`cellctl accounts ensure\` again to resume`,
      };
    }
    if (outcome.state === CreateAccountState.FAILED) {
      const reason = `${outcome.reason ?? 'UNKNOWN'}${FAILURE_HINTS[outcome.reason ?? ''] ? `: ${FAILURE_HINTS[outcome.reason!]}` : ''}`;
      this.record(target.cell, { status: 'FAILED', failureReason: outcome.reason, createAccountRequestId: undefined });
      return { cell: target.cell, action: 'failed', reason };
    }
    const accountId = outcome.accountId!;
    this.record(target.cell, { accountId, status: 'CREATED' });
    await this.place(target.cell, accountId);
    return { cell: target.cell, action: resumed ? 'resumed' : 'created', accountId };
  }

  public async ensure(target: VendTarget): Promise<VendResult> {
    const { cell } = target;
    const existing = this.options.file.read().cells[cell];
    if (existing?.accountId) {
      if (existing.status === 'ACTIVE' && existing.organizationalUnit === this.options.organizationalUnitId) {
        return { cell, action: 'existing', accountId: existing.accountId };
      }
      const moved = await this.place(cell, existing.accountId);
      if (moved) return { cell, action: this.options.dryRun ? 'would-move' : 'moved', accountId: existing.accountId };
      return { cell, action: 'existing', accountId: existing.accountId };
    }
    if (existing?.createAccountRequestId && existing.status === 'CREATING') {
      if (this.options.dryRun) return { cell, action: 'would-resume', reason: `request ${existing.createAccountRequestId}` };
      this.options.progress?.(`${cell}: resuming request ${existing.createAccountRequestId}`);
      return this.finish(target, existing.createAccountRequestId, true);
    }
    const adopted = (await this.accountsByEmail()).get(target.email.toLowerCase());
    if (adopted) {
      if (this.options.dryRun) return { cell, action: 'would-adopt', accountId: adopted };
      this.record(cell, { accountId: adopted, email: target.email, status: 'CREATED', failureReason: undefined });
      this.options.progress?.(`${cell}: adopting existing account ${adopted} (${target.email})`);
      await this.place(cell, adopted);
      return { cell, action: 'adopted', accountId: adopted };
    }
    if (this.options.dryRun) return { cell, action: 'would-create', reason: `${target.accountName} <${target.email}>` };
    const { CreateAccountStatus: status } = await this.retry('CreateAccount', () =>
      this.org.send(
        new CreateAccountCommand({
          AccountName: target.accountName,
          Email: target.email,
          RoleName: this.options.roleName,
          IamUserAccessToBilling: 'DENY',
          Tags: [
            { Key: 'cell', Value: cell },
            { Key: 'app', Value: this.options.app },
          ],
        }),
      ),
    );
    const requestId = status!.Id!;
    // Recorded before polling: a crash from here on resumes from this id instead of creating twice.
    this.record(cell, { createAccountRequestId: requestId, email: target.email, status: 'CREATING', failureReason: undefined });
    this.options.progress?.(`${cell}: CreateAccount ${target.accountName} <${target.email}> -> request ${requestId}`);
    return this.finish(target, requestId, false);
  }
}

/**
 * Makes sure every target cell has an account: keeps recorded ones (moving them into the OU if
 * needed), resumes recorded requests, adopts accounts found by email, creates the rest. Cells are
 * handled one at a time (Organizations allows few concurrent creations); a cell's failure is
 * reported and the others continue; a missing permission or missing credentials stop the run.
 */
export async function ensureAccounts(org: OrganizationsClient, targets: readonly VendTarget[], options: VendOptions): Promise<VendResult[]> {
  const vendor = new Vendor(org, options);
  const results: VendResult[] = [];
  for (const [i, target] of targets.entries()) {
    try {
      results.push(await vendor.ensure(target));
    } catch (error) {
      if (error instanceof MissingPermissionError) throw error;
      // No credentials fail every cell the same way: stop at the first, once.
      if (isCredentialsError(error)) throw new NoCredentialsError(error as Error);
      results.push({ cell: target.cell, action: 'failed', reason: `${(error as Error).name}: ${(error as Error).message}` });
    }
    // Where the run is (account creation takes minutes per cell), and what this cell came to.
    const done = results[results.length - 1];
    options.progress?.(
      `[${i + 1}/${targets.length}] ${done.cell}: ${done.action}${done.accountId ? ` ${done.accountId}` : ''}${done.reason ? ` (${done.reason})` : ''}`,
    );
  }
  return results;
}
