import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { CliError, CliIo, EXIT, json, writeFileAtomic } from './io';
import { DEFAULT_LOCAL_STATE_DIR } from './move-commands';

/** Where `cellctl target` keeps the chosen target: in the working directory, like the fleet file. */
export const TARGET_FILE = '.cellctl-target.json';
/** Overrides the file: `local`, `local:<state dir>` or `aws`. */
export const TARGET_ENV = 'CELLCTL_TARGET';

export type Target = { readonly kind: 'local'; readonly stateDir: string } | { readonly kind: 'aws' };

/** The chosen target and where it was chosen, or undefined when none is. */
export interface ChosenTarget {
  readonly target: Target;
  readonly from: string;
}

function parseEnv(value: string): Target {
  if (value === 'aws') return { kind: 'aws' };
  if (value === 'local') return { kind: 'local', stateDir: DEFAULT_LOCAL_STATE_DIR };
  const local = /^local:(.+)$/.exec(value);
  if (local) return { kind: 'local', stateDir: local[1] };
  throw new CliError(`${TARGET_ENV}=${value}: give local, local:<state dir> or aws (or unset it to use ${TARGET_FILE})`, EXIT.usage);
}

/** The target chosen by CELLCTL_TARGET, else by .cellctl-target.json in `cwd`. */
export function chosenTarget(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): ChosenTarget | undefined {
  const fromEnv = env[TARGET_ENV];
  if (fromEnv) return { target: parseEnv(fromEnv), from: TARGET_ENV };
  const file = path.join(cwd, TARGET_FILE);
  if (!fs.existsSync(file)) return undefined;
  let parsed: { target?: unknown; stateDir?: unknown };
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof parsed;
  } catch (error) {
    throw new CliError(
      `${TARGET_FILE}: not valid JSON (${(error as Error).message}); choose again with \`cellctl target local\` or \`cellctl target aws\``,
    );
  }
  if (parsed.target === 'aws') return { target: { kind: 'aws' }, from: TARGET_FILE };
  if (parsed.target === 'local' && (parsed.stateDir === undefined || typeof parsed.stateDir === 'string')) {
    return { target: { kind: 'local', stateDir: (parsed.stateDir as string | undefined) ?? DEFAULT_LOCAL_STATE_DIR }, from: TARGET_FILE };
  }
  throw new CliError(
    `${TARGET_FILE}: target must be "local" (with an optional stateDir) or "aws"; choose again with \`cellctl target local\` or \`cellctl target aws\``,
  );
}

const describe = (t: Target) =>
  t.kind === 'local' ? `the local fleet in ${t.stateDir}` : 'the AWS fleet (cells.config.ts, the standard credentials)';

/**
 * Applies the chosen target to a command that takes `--local`, before it runs: a local target sets
 * `--local` and its state directory, unless the command line names them; the command's first line
 * on stderr then says which target it acts on and where that was chosen. A target on the command
 * line (`--local`) wins and is not announced: the operator just typed it.
 */
export function applyTarget(actionCommand: Command, io: CliIo): void {
  // A subcommand may take its parent's options (`capacity plan` takes `capacity`'s).
  let command: Command | null = actionCommand;
  while (command && !command.options.some((o) => o.long === '--local')) command = command.parent;
  if (!command) return;
  if (command.getOptionValueSource('local') === 'cli') return;
  const chosen = chosenTarget();
  if (!chosen) return;
  if (chosen.target.kind === 'local') {
    command.setOptionValueWithSource('local', true, 'env');
    if (command.options.some((o) => o.long === '--state-dir') && command.getOptionValueSource('stateDir') !== 'cli') {
      command.setOptionValueWithSource('stateDir', chosen.target.stateDir, 'env');
    }
  }
  io.err(`target: ${describe(chosen.target)} (from ${chosen.from})\n`);
}

/** `cellctl target [local [--state-dir DIR] | aws | clear]`. */
export function targetCommand(io: CliIo): Command {
  const target = new Command('target')
    .description(`the target every command acts on unless it says --local: chosen once, kept in ${TARGET_FILE} (${TARGET_ENV} overrides it)`)
    .option('--json', 'print the target as JSON')
    .action((flags: { json?: boolean }) => {
      const chosen = chosenTarget();
      if (flags.json) io.out(json(chosen ?? null));
      else
        io.out(
          chosen
            ? `${describe(chosen.target)} (from ${chosen.from})\n`
            : `none chosen: commands act on AWS unless they say --local (\`cellctl target local\` chooses the local fleet)\n`,
        );
    });
  target
    .command('local')
    .description('act on the local fleet (`cellctl fleet local`) without --local')
    .option('--state-dir <dir>', "the local fleet's state directory", DEFAULT_LOCAL_STATE_DIR)
    .action((flags: { stateDir: string }) => {
      writeFileAtomic(TARGET_FILE, `${JSON.stringify({ target: 'local', stateDir: flags.stateDir }, null, 2)}\n`);
      io.out(`target: the local fleet in ${flags.stateDir} (${TARGET_FILE})\n`);
    });
  target
    .command('aws')
    .description('act on the AWS fleet (the default when nothing is chosen)')
    .action(() => {
      writeFileAtomic(TARGET_FILE, `${JSON.stringify({ target: 'aws' }, null, 2)}\n`);
      io.out(`target: the AWS fleet (${TARGET_FILE})\n`);
    });
  target
    .command('clear')
    .description(`forget the chosen target (removes ${TARGET_FILE})`)
    .action(() => {
      fs.rmSync(TARGET_FILE, { force: true });
      io.out(`no target chosen: commands act on AWS unless they say --local\n`);
    });
  return target;
}
