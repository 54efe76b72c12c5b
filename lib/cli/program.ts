import { Command, CommanderError } from 'commander';
import { CliError, CliIo, EXIT } from './io';
import { accountsCommand } from './accounts-commands';
import { mappingCommand } from './mapping-commands';
import { planCommand } from './plan-command';
import { routerCommand } from './router-commands';

/** The `cellctl` command tree. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('cellctl')
    .description('operate a cell fleet: mapping, accounts, wave plan, local router')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run with --help for usage)');
  program.addCommand(mappingCommand(io));
  program.addCommand(accountsCommand(io));
  program.addCommand(planCommand(io));
  program.addCommand(routerCommand(io));
  // Subcommands built on their own need the same exit and output handling.
  const apply = (command: Command) => {
    command.exitOverride().configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) }).showHelpAfterError('(run with --help for usage)');
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
      if (['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(error.code)) return EXIT.ok;
      // commander.executeSubCommandAsync etc.: a group run without a subcommand shows its help.
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      if (error.message) io.err(`error: ${error.message}\n`);
      return error.exitCode;
    }
    io.err(`error: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT.invalid;
  }
}
