import { spawnSync } from 'child_process';
import { Command } from 'commander';
// The accounts module and the AWS SDK load when a command runs, not when cellctl starts (see bench:cli).
import type { VendTarget } from '../adapters/accounts';
import { cellAccounts, displayPath, FleetConfigError, fleetProblems, loadFleetInput, readAccountsFile, writeAccountsFile } from '../domain/fleet';
import { fleetFrom, withConfig } from './context';
import { CliError, CliIo, formatTable, json } from './io';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The config for account commands: valid except for the accounts they are about to vend. */
function accountsInput(configPath: string) {
  return withConfig(() => {
    const loaded = loadFleetInput(configPath);
    const file = readAccountsFile(loaded.accountsPath);
    const problems = fleetProblems(loaded.input, cellAccounts(file), { allowMissingAccounts: true, accountsFile: displayPath(loaded.accountsPath) });
    if (problems.length > 0) throw new FleetConfigError(problems, displayPath(loaded.file));
    return { ...loaded, file };
  });
}

/** The fleet's accounts in the organization of the caller's management account; Organizations' errors said in one line. */
async function membershipOf(
  org: import('@aws-sdk/client-organizations').OrganizationsClient,
  fleet: Parameters<typeof import('../adapters/accounts').checkMembership>[1],
  io: CliIo,
) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { checkMembership, MissingPermissionError } = require('../adapters/accounts') as typeof import('../adapters/accounts');
  try {
    return await checkMembership(org, fleet, { sleep, progress: (line) => io.err(`${line}\n`) });
  } catch (error) {
    if (error instanceof MissingPermissionError) throw new CliError(error.message);
    const { name, message } = error as Error;
    if (name === 'AWSOrganizationsNotInUseException')
      throw new CliError(`these credentials' account is in no organization (${name}); run with the management account of the fleet's organization`);
    throw new CliError(
      `cannot list the organization's accounts (Organizations ${name}: ${message}); run with credentials of the organization's management account`,
    );
  }
}

/** `cellctl accounts …`: one AWS account per cell, vended through AWS Organizations. */
export function accountsCommand(io: CliIo): Command {
  const accounts = new Command('accounts').description('one AWS account per cell, vended through AWS Organizations');

  accounts
    .command('ensure')
    .description('create, adopt or resume an account for every cell without one; results go to cells.accounts.json')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--dry-run', 'say what would be done; only read-only Organizations calls')
    .option('--json', 'print the results as JSON')
    .action(async (flags: { config: string; dryRun?: boolean; json?: boolean }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { ensureAccounts, MissingPermissionError } = require('../adapters/accounts') as typeof import('../adapters/accounts');
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { OrganizationsClient } = require('@aws-sdk/client-organizations') as typeof import('@aws-sdk/client-organizations');
      const { input, accountsPath } = accountsInput(flags.config);
      const org = input.organization;
      if (!org) throw new CliError('cells.config.ts has no `organization` section; add accountEmail and organizationalUnitId to vend accounts');
      const targets: VendTarget[] = input.cells
        .filter((cell) => cell.account === undefined)
        .map((cell) => ({
          cell: cell.id,
          accountName: `${input.app}-${cell.id}`,
          email: org.accountEmail.replace('{app}', input.app).replace('{cell}', cell.id),
        }));
      const client = new OrganizationsClient({ region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1' });
      let results;
      try {
        results = await ensureAccounts(client, targets, {
          app: input.app,
          organizationalUnitId: org.organizationalUnitId,
          roleName: org.roleName ?? 'OrganizationAccountAccessRole',
          dryRun: flags.dryRun,
          sleep,
          progress: (line) => io.err(`${line}\n`),
          file: { read: () => readAccountsFile(accountsPath), write: (file) => writeAccountsFile(accountsPath, file) },
        });
      } catch (error) {
        if (error instanceof MissingPermissionError) throw new CliError(error.message);
        throw error;
      } finally {
        client.destroy();
      }
      io.out(
        flags.json
          ? json(results)
          : formatTable(
              ['cell', 'action', 'account', 'reason'],
              results.map((r) => [r.cell, r.action, r.accountId ?? '-', r.reason ?? '']),
            ),
      );
      const failed = results.filter((r) => r.action === 'failed');
      if (failed.length > 0) throw new CliError(flags.json ? '' : `${failed.length} cell(s) failed: ${failed.map((r) => r.cell).join(', ')}`);
    });

  accounts
    .command('list')
    .description('cell → account → OU → status')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--json', 'print as JSON')
    .action((flags: { config: string; json?: boolean }) => {
      const { input, file } = accountsInput(flags.config);
      const rows = input.cells.map((cell) => {
        const record = file.cells[cell.id];
        return {
          cell: cell.id,
          account: cell.account ?? record?.accountId ?? null,
          organizationalUnit: record?.organizationalUnit ?? null,
          status: cell.account ? 'CONFIG' : (record?.status ?? 'MISSING'),
          ...(record?.failureReason ? { failureReason: record.failureReason } : {}),
        };
      });
      io.out(
        flags.json
          ? json(rows)
          : formatTable(
              ['cell', 'account', 'ou', 'status'],
              rows.map((r) => [
                r.cell,
                r.account ?? '-',
                r.organizationalUnit ?? '-',
                r.failureReason ? `${r.status} (${r.failureReason})` : r.status,
              ]),
            ),
      );
    });

  accounts
    .command('bootstrap')
    .description(
      "print (or --run) `cdk bootstrap` for every account and region the fleet deploys to: tooling, router and cell accounts, and cell zero's; each trusts the tooling account",
    )
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--run', 'run the commands one after the other, each as organization.roleName in its account, stopping at the first failure')
    .option('--cdk <command>', 'how to invoke the CDK CLI', 'npx cdk')
    .option('--json', 'print the commands as JSON')
    .option('--allow-example-accounts', 'run even against the example account ids of the sample config (111111111111, 222222222222, 33333333333N, …)')
    .action(async (flags: { config: string; run?: boolean; cdk: string; json?: boolean; allowExampleAccounts?: boolean }) => {
      const { BootstrapError, bootstrapEnvironments, exampleAccounts, organizationRoleCredentials, runBootstrap } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
        require('../adapters/accounts') as typeof import('../adapters/accounts');
      const fleet = fleetFrom(flags.config);
      let environments;
      try {
        environments = bootstrapEnvironments(fleet, {
          executionPolicyArn: fleet.organization?.executionPolicyArn ?? `arn:${fleet.partition}:iam::aws:policy/AdministratorAccess`,
        });
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      const launcher = flags.cdk.split(' ').filter(Boolean);
      const examples = exampleAccounts(environments);
      const fix = `put your tooling and router account ids in ${flags.config} (\`accounts.tooling\`, \`accounts.router\`) and vend the cell accounts with \`cellctl accounts ensure\` (remove the shipped cells.accounts.json first)`;
      if (examples.count > 0 && flags.run && !flags.allowExampleAccounts) {
        throw new CliError(
          `refusing to bootstrap the example account ids of the sample config: ${examples.summary}; ${fix}; if these really are your accounts, add --allow-example-accounts`,
        );
      }
      if (examples.count > 0 && !flags.run)
        io.err(`note: ${examples.count} of these accounts are examples from the sample config: ${examples.summary}; ${fix}\n`);
      if (!flags.run) {
        io.out(
          flags.json
            ? json(environments.map((e) => ({ account: e.account, region: e.region, purposes: e.purposes, command: [...launcher, ...e.args] })))
            : `${environments.map((e) => `${[...launcher, ...e.args].join(' ')}    # ${e.purposes.join(', ')}`).join('\n')}\n`,
        );
        return;
      }
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { STSClient } = require('@aws-sdk/client-sts') as typeof import('@aws-sdk/client-sts');
      const sts = new STSClient({
        region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? fleet.pipeline?.region ?? Object.keys(fleet.regions)[0],
      });
      try {
        let credentialsFor;
        try {
          credentialsFor = await organizationRoleCredentials(sts, fleet.organization?.roleName ?? 'OrganizationAccountAccessRole');
        } catch (error) {
          throw new CliError(
            `cannot tell which account you are in (STS GetCallerIdentity: ${(error as Error).name}: ${(error as Error).message}); configure credentials of the organization's management account (AWS_PROFILE, or the standard credential chain)`,
          );
        }
        // Every account of the fleet a member of the organization, before anything is bootstrapped.
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
        const { OrganizationsClient } = require('@aws-sdk/client-organizations') as typeof import('@aws-sdk/client-organizations');
        const org = new OrganizationsClient({ region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1' });
        try {
          const { problems } = await membershipOf(org, fleet, io);
          if (problems.length > 0) throw new CliError(`nothing bootstrapped: ${problems.join('; ')}`);
        } finally {
          org.destroy();
        }
        await runBootstrap(environments, {
          launcher,
          credentialsFor,
          baseEnv: process.env,
          progress: (line) => io.err(line),
          run: (argv, env) => {
            const result = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', env });
            return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}`, error: result.error?.message };
          },
        });
      } catch (error) {
        if (error instanceof BootstrapError) throw new CliError(error.message);
        throw error;
      } finally {
        sts.destroy();
      }
      io.out(`bootstrapped ${environments.length} environment(s)\n`);
    });

  accounts
    .command('check')
    .description(
      "check, from the organization's management account, that every account of the fleet (tooling, router, cells, cell zero) is an active member of the organization pipeline.organizationId names",
    )
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--json', 'print the report as JSON')
    .action(async (flags: { config: string; json?: boolean }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { OrganizationsClient } = require('@aws-sdk/client-organizations') as typeof import('@aws-sdk/client-organizations');
      const fleet = fleetFrom(flags.config);
      const org = new OrganizationsClient({ region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1' });
      let report;
      try {
        report = await membershipOf(org, fleet, io);
      } finally {
        org.destroy();
      }
      if (flags.json) io.out(json(report));
      else
        io.out(
          formatTable(
            ['account', 'status', 'purposes'],
            report.accounts.map((a) => [a.account, a.status, a.purposes.join(', ')]),
          ),
        );
      if (report.problems.length > 0) {
        for (const problem of report.problems) io.err(`${problem}\n`);
        throw new CliError(`${report.problems.length} problem(s) with the fleet's accounts in organization ${report.organizationId}`);
      }
    });

  accounts
    .command('policy')
    .description('print the IAM policy `accounts ensure` and `accounts bootstrap --run` need in the management account')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .action((flags: { config: string }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { operatorPolicy } = require('../adapters/accounts') as typeof import('../adapters/accounts');
      const fleet = fleetFrom(flags.config);
      io.out(json(operatorPolicy({ roleName: fleet.organization?.roleName ?? 'OrganizationAccountAccessRole', partition: fleet.partition })));
    });

  return accounts;
}
