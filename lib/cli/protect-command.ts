import { spawn } from 'child_process';
import { Command } from 'commander';
import { fleetProtectTargets, selectProtectTargets } from '../operations/protect/targets';
import { protectCommands } from '../runtime/pipeline/protect';
import { shellQuote } from '../runtime/pipeline/shell';
import { fleetFrom } from './context';
import { CliError, CliIo } from './io';

/**
 * `cellctl protect`: what the pipeline's protect step does after each deploy, for a fleet deployed
 * with `cdk deploy`: termination protection on every stack (`cdk deploy` sets it already; checked and
 * skipped), deletion protection on the cells' and routers' load balancers and databases (which the
 * templates leave off so that a failed first create can roll back). The same script as the
 * pipeline's (lib/runtime/pipeline/protect.ts), run with bash and the AWS CLI as the caller: it
 * assumes each environment's CDK deploy role and each stack's protector role, which trust the
 * tooling account.
 */
export function protectCommand(io: CliIo): Command {
  return new Command('protect')
    .description(
      "switch on what the pipeline's protect step does, for a fleet deployed with cdk deploy: termination protection on every stack, deletion protection on the cells' and routers' load balancers and databases; run with the tooling account's credentials",
    )
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--stack <name...>', "only these stacks (the fleet's stack names)")
    .option('--print', 'print the bash script instead of running it')
    .option('--aws <command>', 'how to invoke the AWS CLI', 'aws')
    .action(async (flags: { config: string; stack?: string[]; print?: boolean; aws: string }) => {
      const fleet = fleetFrom(flags.config);
      let targets;
      try {
        targets = selectProtectTargets(fleetProtectTargets(fleet), flags.stack ?? []);
      } catch (error) {
        throw new CliError(`--stack ${(error as Error).message}`);
      }
      const launcher = flags.aws.split(' ').filter(Boolean);
      const script = [
        'set -o pipefail',
        // The AWS CLI the operator named, whatever else is on PATH.
        `aws() { ${launcher.map(shellQuote).join(' ')} "$@"; }`,
        ...protectCommands(targets),
      ].join('\n');
      if (flags.print) {
        io.out(`#!/usr/bin/env bash\n${script}\n`);
        return;
      }
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn('bash', ['--norc', '--noprofile', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout.on('data', (chunk: Buffer) => io.out(chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => io.err(chunk.toString()));
        child.on('error', (error) =>
          reject(new CliError(`cannot run bash (${error.message}); cellctl protect runs its script with bash and the AWS CLI`)),
        );
        child.on('close', (status) => resolve(status ?? 1));
      });
      if (code !== 0)
        throw new CliError(
          `protect stopped (exit ${code}) at the stack named above; what it protected stays protected, and running it again skips that and goes on`,
        );
      io.out(`protected ${targets.length} stack(s)\n`);
    });
}
