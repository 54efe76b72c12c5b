/**
 * `cdk bootstrap` for every account and region the fleet deploys to: the tooling account in the
 * pipeline's region (the pipeline stack and its self-mutation), the router account in every region
 * (router stacks, their container images in the router account's ECR), every cell's account in
 * its region, and a cell zero's account in its region (its adoption stack). The router and cell environments trust the tooling account, whose pipeline assumes
 * their deploy and publishing roles. The pipeline's cross-region support stacks need no bootstrap of
 * their own: CDK deploys them with the pipeline region's roles (a bootstrapless synthesizer).
 */
export interface BootstrapEnvironment {
  readonly account: string;
  readonly region: string;
  /** What deploys there: `tooling`, `router`, `cell <id>`. */
  readonly purposes: readonly string[];
  /** The `cdk bootstrap` arguments after `cdk`. */
  readonly args: readonly string[];
}

export interface BootstrapFleet {
  readonly accounts: { readonly tooling: string; readonly router: string };
  readonly regions: Readonly<Record<string, unknown>>;
  readonly cells: readonly { readonly id: string; readonly account: string; readonly region: string }[];
  /** An adopted existing stack: the factory deploys its adoption stack there. */
  readonly cellZero?: { readonly id: string; readonly account: string; readonly region: string };
  readonly pipeline?: { readonly region: string };
}

/** Placeholder in `organization.executionPolicyArn` for the account being bootstrapped. */
export const ACCOUNT_PLACEHOLDER = '{account}';

/**
 * The execution policy for one account. A customer-managed policy exists only in its own account,
 * so a policy ARN naming one account cannot serve the others: use an AWS managed policy or
 * `arn:<partition>:iam::{account}:policy/NAME` (created in every account beforehand).
 */
export function executionPolicyFor(policyArn: string, account: string): string {
  const [, partition, owner] = /^arn:([\w-]+):iam::(\d{12}):policy\//.exec(policyArn) ?? [];
  if (owner !== undefined && owner !== account) {
    throw new Error(
      `organization.executionPolicyArn ${policyArn} is a policy of account ${owner}; CloudFormation in account ${account} cannot use it. Use an AWS managed policy or arn:${partition}:iam::${ACCOUNT_PLACEHOLDER}:policy/<name>, created in every account`,
    );
  }
  return policyArn.split(ACCOUNT_PLACEHOLDER).join(account);
}

/** One environment per account × region the fleet deploys to, tooling first, then routers, then cells, then cell zero. */
export function bootstrapEnvironments(fleet: BootstrapFleet, options: { executionPolicyArn: string }): BootstrapEnvironment[] {
  const byEnvironment = new Map<string, { account: string; region: string; purposes: string[] }>();
  const add = (account: string, region: string, purpose: string) => {
    const key = `${account}/${region}`;
    const entry = byEnvironment.get(key) ?? { account, region, purposes: [] };
    entry.purposes.push(purpose);
    byEnvironment.set(key, entry);
  };
  if (fleet.pipeline) add(fleet.accounts.tooling, fleet.pipeline.region, 'tooling');
  for (const region of Object.keys(fleet.regions)) add(fleet.accounts.router, region, 'router');
  for (const cell of fleet.cells) add(cell.account, cell.region, `cell ${cell.id}`);
  if (fleet.cellZero)
    add(fleet.cellZero.account, fleet.cellZero.region, fleet.cellZero.id === 'zero' ? 'cell zero' : `cell zero ${fleet.cellZero.id}`);
  return [...byEnvironment.values()].map(({ account, region, purposes }) => ({
    account,
    region,
    purposes,
    args: [
      'bootstrap',
      `aws://${account}/${region}`,
      // The tooling account deploys into itself with its own roles; every other account trusts it.
      ...(account === fleet.accounts.tooling ? [] : ['--trust', fleet.accounts.tooling]),
      '--cloudformation-execution-policies',
      executionPolicyFor(options.executionPolicyArn, account),
    ],
  }));
}

/** Temporary credentials for one account (STS AssumeRole). */
export interface AccountCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

export interface BootstrapRunOptions {
  /** How to start the CDK CLI, for example `['npx', 'cdk']`. */
  readonly launcher: readonly string[];
  /** Credentials for `account`, or undefined to run with the caller's own (its own account). */
  readonly credentialsFor: (account: string) => Promise<AccountCredentials | undefined>;
  /** Runs one command to completion. */
  readonly run: (argv: readonly string[], env: NodeJS.ProcessEnv) => { status: number | null; output: string; error?: string };
  /** The environment the commands start from (normally process.env). */
  readonly baseEnv: NodeJS.ProcessEnv;
  readonly progress?: (line: string) => void;
}

/** Bootstrapping one environment failed; the environments before it are done. */
export class BootstrapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BootstrapError';
  }
}

/**
 * The environment a `cdk bootstrap` of `region` runs with: the assumed role's credentials, if any,
 * and no profile. The CDK CLI acts on an environment only with credentials of that environment's
 * account ("Need to perform AWS calls for account X, but the current credentials are for Y"), and
 * the SDK prefers AWS_PROFILE over credentials in the environment, so a profile must not be left set.
 */
export function bootstrapProcessEnv(base: NodeJS.ProcessEnv, region: string, credentials: AccountCredentials | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, AWS_REGION: region, AWS_DEFAULT_REGION: region };
  if (credentials) {
    delete env.AWS_PROFILE;
    delete env.AWS_DEFAULT_PROFILE;
    env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
    env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
    env.AWS_SESSION_TOKEN = credentials.sessionToken;
  }
  return env;
}

/**
 * Runs every bootstrap, one after the other, each with credentials of its own account, and stops at
 * the first failure. `cdk bootstrap` of an environment already bootstrapped changes nothing, so
 * running again after a failure resumes.
 */
export async function runBootstrap(environments: readonly BootstrapEnvironment[], options: BootstrapRunOptions): Promise<void> {
  for (const environment of environments) {
    const where = `${environment.account}/${environment.region} (${environment.purposes.join(', ')})`;
    let credentials: AccountCredentials | undefined;
    try {
      credentials = await options.credentialsFor(environment.account);
    } catch (error) {
      throw new BootstrapError(`bootstrap of ${where}: ${(error as Error).message}`);
    }
    const argv = [...options.launcher, ...environment.args];
    options.progress?.(`$ ${argv.join(' ')}${credentials ? ' (as the assumed role)' : ''}\n`);
    const result = options.run(argv, bootstrapProcessEnv(options.baseEnv, environment.region, credentials));
    if (result.output) options.progress?.(result.output);
    if (result.status !== 0) {
      throw new BootstrapError(
        `bootstrap of ${where} failed with ${result.status === null ? (result.error ?? 'no exit code') : `exit ${result.status}`}; fix it and run again (bootstrapped environments are left as they are)`,
      );
    }
  }
}
