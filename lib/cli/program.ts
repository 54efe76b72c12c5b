import { Command, CommanderError } from 'commander';
import { credentialsHint, isCredentialsError, NoCredentialsError } from '../adapters/aws';
import { packageVersion } from '../domain/files/package-root';
import { CliError, CliIo, EXIT } from './io';
import { accountsCommand } from './accounts-commands';
import { mappingCommand } from './mapping-commands';
import { moveCommand } from './move-commands';
import { planCommand } from './plan-command';
import { routerCommand } from './router-commands';
import { fleetCommand } from './fleet-commands';
import { capacityCommand, placeCommand } from './capacity-commands';
import { cellZeroCommand } from './cell-zero-commands';
import { protectCommand } from './protect-command';
import { lanesCommand } from './lanes-commands';
import { zoneCommand } from './zone-commands';
import { costCommand } from './cost-commands';
import { statusCommand } from './status-command';
import { applyTarget, targetCommand } from './target';
import { completionCommand } from './completion';

/** The `cellctl` command tree. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('cellctl')
    .description('operate a cell fleet: mapping, accounts, wave plan, local router')
    .version(packageVersion(__dirname), '-V, --version', "print cellctl's version")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run with --help for usage)');
  program.addCommand(mappingCommand(io));
  program.addCommand(accountsCommand(io));
  program.addCommand(planCommand(io));
  program.addCommand(routerCommand(io));
  program.addCommand(moveCommand(io));
  program.addCommand(fleetCommand(io));
  program.addCommand(capacityCommand(io));
  program.addCommand(placeCommand(io));
  program.addCommand(cellZeroCommand(io));
  program.addCommand(protectCommand(io));
  program.addCommand(lanesCommand(io));
  program.addCommand(zoneCommand(io));
  program.addCommand(costCommand(io));
  program.addCommand(statusCommand(io));
  program.addCommand(targetCommand(io));
  program.addCommand(completionCommand(io, () => program));
  program.hook('preAction', (_program, actionCommand) => applyTarget(actionCommand, io));
  // Subcommands built on their own need the same exit and output handling.
  const apply = (command: Command) => {
    command
      .exitOverride()
      .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
      .showHelpAfterError('(run with --help for usage)');
    command.commands.forEach(apply);
  };
  program.commands.forEach(apply);
  return program;
}

/** Runs `cellctl` with `argv` (no node/script prefix) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  if (argv.length === 0) {
    program.outputHelp();
    return EXIT.usage;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (['commander.helpDisplayed', 'commander.version'].includes(error.code)) return EXIT.ok;
      // `cellctl help mapping` asks for help (0); `cellctl mapping` without a subcommand shows it as a usage error, like bare `cellctl`.
      if (error.code === 'commander.help') return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      if (error.message) io.err(`error: ${error.message}\n`);
      return error.exitCode;
    }
    if (isCredentialsError(error) || error instanceof NoCredentialsError) {
      io.err(`error: ${error instanceof NoCredentialsError ? error.message : credentialsHint(error as Error)}\n`);
      return EXIT.invalid;
    }
    // Unexpected: still one line; the stack only when asked for.
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    io.err(
      process.env.CELLCTL_DEBUG
        ? `error: ${(error as Error).stack ?? String(error)}\n`
        : `error: ${message} (set CELLCTL_DEBUG=1 for the stack trace)\n`,
    );
    return EXIT.invalid;
  }
}
