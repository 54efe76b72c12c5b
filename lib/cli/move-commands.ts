import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Command } from 'commander';
import {
  abortMove,
  describeSubject,
  FileRoutingControl,
  forgetMove,
  LocalHandoffStore,
  LocalMoveStore,
  MoveConflictError,
  MoveError,
  MovePlan,
  MoverDeps,
  MoveRecord,
  MoveStore,
  MoveSubject,
  parseRanges,
  planMove,
  runMove,
  systemClock,
  tenantSubject,
} from '../operations/moves';
// The PostgreSQL client loads when a move runs, not when cellctl starts (npm run bench:cli).
import { totalBuckets } from '../domain/mapping/homes';
import type { PostgresCellData } from '../operations/moves/cell-data';
import { readLocalFleet, routerVersionProbe } from '../operations/moves/local-fleet';
import { fleetFrom } from './context';
import { CliError, CliIo, EXIT, formatTable, json, readText } from './io';

interface MoveFlags {
  readonly local?: boolean;
  readonly stateDir: string;
  readonly json?: boolean;
  readonly copyRate?: string;
  /** Without --local: the fleet config, and optionally the move bucket. */
  readonly config?: string;
  readonly movesBucket?: string;
}

/** The local fleet's default state directory (contract 4). */
export const DEFAULT_LOCAL_STATE_DIR = '.cells-local';

/** Stores, cells and routing of the running local fleet; `close` ends the database pools. */
function copyRateOf(flags: MoveFlags): number | undefined {
  const copyRowsPerSecond = flags.copyRate === undefined ? undefined : Number(flags.copyRate);
  if (copyRowsPerSecond !== undefined && !(copyRowsPerSecond > 0))
    throw new CliError(`--copy-rate ${flags.copyRate}: give rows per second > 0`, EXIT.usage);
  return copyRowsPerSecond;
}

/**
 * Stores, cells and routing of the AWS fleet (lib/cli/move-aws.ts): the move bucket, every region's
 * mapping bucket, each cell's mover task. Nothing to close: every cell call is a task of its own.
 */
interface OpenedDeps {
  readonly deps: MoverDeps;
  /** Reads the mapping: the cells' bucket count (per table) is set from it; returns the buckets of its whole space (every home table's), which bucket ranges are given in. */
  readonly bucketCount: () => Promise<number>;
  readonly close: () => Promise<void>;
  /** AWS: stop the mover tasks this command started (on SIGINT / SIGTERM). */
  readonly interrupt?: (reason: string) => Promise<{ stopped: string[]; failed: string[] }>;
}

async function awsDeps(io: CliIo, flags: MoveFlags): Promise<OpenedDeps> {
  const copyRowsPerSecond = copyRateOf(flags);
  const fleet = fleetFrom(flags.config ?? 'cells.config.ts');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { awsMoveContext } = require('./move-aws') as typeof import('./move-aws');
  const progress = (line: string) => io.err(`${line}\n`);
  const context = await awsMoveContext(fleet, { movesBucket: flags.movesBucket, copyRowsPerSecond, clock: systemClock, progress });
  let bucketCount: number | undefined;
  const deps: MoverDeps = {
    store: context.store,
    handoff: context.handoff,
    routing: context.routing,
    cell: (id) => context.cell(id, bucketCount!),
    clock: systemClock,
    limits: copyRowsPerSecond ? { copyRowsPerSecond } : {},
    actor: process.env.CELLCTL_ACTOR ?? os.userInfo().username,
    progress,
  };
  return {
    deps,
    bucketCount: async () => {
      const doc = await context.routing.read();
      bucketCount = doc.bucketCount;
      return totalBuckets(doc);
    },
    close: async () => undefined,
    interrupt: (reason) => context.interrupt(reason),
  };
}

function localDeps(io: CliIo, flags: MoveFlags): OpenedDeps {
  const stateDir = path.resolve(flags.stateDir);
  const fleet = readLocalFleet(stateDir);
  const copyRowsPerSecond = copyRateOf(flags);
  const routing = new FileRoutingControl(fleet.mappingFile, routerVersionProbe(fleet.routerUrls), systemClock);
  const opened = new Map<string, PostgresCellData>();
  let bucketCount: number | undefined;
  const deps: MoverDeps = {
    store: new LocalMoveStore(path.join(stateDir, 'moves')),
    handoff: new LocalHandoffStore(path.join(stateDir, 'handoff')),
    routing,
    cell: (id) => {
      const db = fleet.cells[id];
      if (!db) throw new MoveError(`cell ${id} is not in ${path.join(stateDir, 'fleet.json')} (cells: ${Object.keys(fleet.cells).join(', ')})`);
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { PostgresCellData: CellData } = require('../operations/moves/cell-data') as typeof import('../operations/moves/cell-data');
      if (!opened.has(id)) opened.set(id, new CellData(id, db, { bucketCount: bucketCount!, batchRows: 5000, clock: systemClock }));
      return opened.get(id)!;
    },
    clock: systemClock,
    limits: copyRowsPerSecond ? { copyRowsPerSecond } : {},
    actor: process.env.CELLCTL_ACTOR ?? os.userInfo().username,
    progress: (line) => io.err(`${line}\n`),
  };
  return {
    deps,
    bucketCount: async () => {
      const doc = await routing.read();
      bucketCount = doc.bucketCount;
      return totalBuckets(doc);
    },
    close: async () => {
      await Promise.all([...opened.values()].map((c) => c.close()));
    },
  };
}

/** Exit code of a command interrupted by SIGINT or SIGTERM (128 + SIGINT), as shells report it. */
export const EXIT_INTERRUPTED = 130;

/**
 * Runs a move action with the local or AWS deps; move errors become exit-1 CLI errors.
 *
 * On AWS a cell's work runs in mover tasks that outlive this process, so SIGINT (Ctrl-C) and SIGTERM
 * are caught while the action runs: every mover task this command started is stopped (StopTask
 * through the cell's launcher role), no other is started, the move's audit log records
 * `interrupted` (signal, step, the tasks stopped), and the command exits 130. The move stays where
 * its record says (its current step is repeated by `cellctl move resume`, as after any failure). A
 * local move has nothing running outside this process: the signal ends it.
 */
async function withDeps<T>(io: CliIo, flags: MoveFlags, body: (deps: MoverDeps, bucketCount: number) => Promise<T>): Promise<T> {
  let opened: OpenedDeps;
  try {
    opened = flags.local ? localDeps(io, flags) : await awsDeps(io, flags);
  } catch (error) {
    if (error instanceof MoveError) throw new CliError(error.message);
    throw error;
  }
  const { bucketCount, close, interrupt } = opened;
  // The move this command drives (the last one it created, changed or audited).
  let current: string | undefined;
  const store = opened.deps.store;
  const deps: MoverDeps = interrupt
    ? {
        ...opened.deps,
        store: {
          description: store.description,
          create: async (record) => {
            current = record.id;
            return store.create(record);
          },
          read: (id) => store.read(id),
          replace: async (record, tag) => {
            current = record.id;
            return store.replace(record, tag);
          },
          list: () => store.list(),
          appendAudit: async (id, entry) => {
            current = id;
            return store.appendAudit(id, entry);
          },
          readAudit: (id) => store.readAudit(id),
          withPlanLock: (b) => store.withPlanLock(b),
        },
      }
    : opened.deps;
  const signals = io.signals ?? process;
  let onSignal: ((signal: NodeJS.Signals) => void) | undefined;
  let handling = false;
  const interrupted = new Promise<never>((_, reject) => {
    if (!interrupt) return;
    onSignal = (signal) => {
      if (handling) {
        io.err(`${signal} again: still stopping the mover tasks\n`);
        return;
      }
      handling = true;
      io.err(`${signal}: stopping the mover tasks this command started…\n`);
      void (async () => {
        const { stopped, failed } = await interrupt(`cellctl move was interrupted (${signal})`);
        let where = '';
        if (current) {
          const id = current;
          const record = await store.read(id).catch(() => undefined);
          where = record ? ` at step ${record.record.completed}` : '';
          await store
            .appendAudit(id, {
              at: deps.clock.now().toISOString(),
              actor: deps.actor,
              event: 'interrupted',
              detail: { signal, completed: record?.record.completed, stoppedTasks: stopped, ...(failed.length > 0 ? { notStopped: failed } : {}) },
            })
            .catch((error: Error) => io.err(`could not record the interruption in ${id}'s audit log: ${error.message}\n`));
        }
        const tasks =
          stopped.length > 0
            ? `stopped mover task${stopped.length > 1 ? 's' : ''} ${stopped.map((a) => a.split('/').pop()).join(', ')}`
            : 'no mover task was running';
        const notStopped =
          failed.length > 0 ? `; could NOT stop ${failed.join(', ')}: stop ${failed.length > 1 ? 'them' : 'it'} in the cell's ECS console` : '';
        const next = current
          ? `; move ${current} stays${where}: \`cellctl move resume ${current}\` continues it (or \`cellctl move abort ${current}\`)`
          : '';
        reject(new CliError(`interrupted by ${signal}: ${tasks}${notStopped}${next}`, EXIT_INTERRUPTED));
      })().catch(reject);
    };
    signals.on('SIGINT', onSignal);
    signals.on('SIGTERM', onSignal);
  });
  interrupted.catch(() => undefined);
  try {
    const ran = (async () => body(deps, await bucketCount()))();
    // Once a signal arrived, the outcome is the interruption's (the body fails with it meanwhile).
    return await Promise.race([
      ran.then(
        (value) => (handling ? interrupted : value),
        (error) => (handling ? interrupted : Promise.reject(error)),
      ),
      interrupted,
    ]);
  } catch (error) {
    if (error instanceof MoveError || error instanceof MoveConflictError) throw new CliError(error.message);
    throw error;
  } finally {
    if (onSignal) {
      signals.off('SIGINT', onSignal);
      signals.off('SIGTERM', onSignal);
    }
    await close();
  }
}

/**
 * The move store alone, for commands that only read records (list, show). A local fleet keeps them
 * as files in `<state dir>/moves` (LocalMoveStore), which stay after the fleet stops: these commands
 * read them without the fleet's databases, router or fleet.json pid. On AWS, the move bucket.
 */
async function withStore<T>(io: CliIo, flags: MoveFlags, body: (store: MoveStore) => Promise<T>): Promise<T> {
  if (!flags.local) return withDeps(io, flags, (deps) => body(deps.store));
  const stateDir = path.resolve(flags.stateDir);
  if (!fs.existsSync(path.join(stateDir, 'fleet.json')) && !fs.existsSync(path.join(stateDir, 'moves'))) {
    throw new CliError(
      `${path.join(stateDir, 'fleet.json')} not found: start the local fleet (\`cellctl fleet local\`), or pass --state-dir DIR where it keeps its state`,
    );
  }
  return body(new LocalMoveStore(path.join(stateDir, 'moves')));
}

function summary(r: MoveRecord): string[] {
  return [
    r.id,
    describeSubject(r.subject),
    `${r.source} -> ${r.target}`,
    r.status,
    r.completed,
    String(r.rowsCopied),
    r.lastError ? `error: ${r.lastError}` : '',
  ];
}

function moveCommonOptions(command: Command): Command {
  return command
    .option('--local', 'act on the running local fleet (`cellctl fleet local`); without it, on the AWS fleet')
    .option('--state-dir <dir>', "with --local: the local fleet's state directory", DEFAULT_LOCAL_STATE_DIR)
    .option('--config <file>', 'AWS: the fleet config', 'cells.config.ts')
    .option('--moves-bucket <name>', "AWS: the move bucket (default: the SSM parameter /<app>/moves/bucket of the fleet's router.homeRegion)")
    .option('--json', 'print the result as JSON');
}

function startCommand(parent: Command, name: string, description: string): Command {
  return moveCommonOptions(parent.command(name).description(description))
    .requiredOption('--to <cell>', 'target cell')
    .option('--reason <text>', 'why (kept in the audit log)', '')
    .option('--copy-rate <rows>', 'rows per second the copy may take (default 20000)')
    .option('--plan-only', 'record the move without running it (run it with `cellctl move resume ID`)');
}

async function start(
  io: CliIo,
  flags: MoveFlags & { to: string; reason: string; planOnly?: boolean },
  subject: (bucketCount: number) => MoveSubject,
): Promise<void> {
  await withDeps(io, flags, async (deps, bucketCount) => {
    const planned = await planMove(deps, { subject: subject(bucketCount), target: flags.to, reason: flags.reason });
    const record = flags.planOnly ? planned : await runMove(deps, planned.id);
    io.out(flags.json ? json(record) : formatTable(['move', 'subject', 'cells', 'status', 'step', 'rows', ''], [summary(record)]));
  });
}

function subjectOrUsage<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof MoveError) throw new CliError(error.message, EXIT.usage);
    throw error;
  }
}

/** `cellctl move …`: move tenants and buckets between cells. */
export function moveCommand(io: CliIo): Command {
  const move = new Command('move').description(
    'move a tenant or buckets to another cell: clone, catch up, freeze, sync, verify, flip, unfreeze, forget',
  );

  startCommand(move, 'tenant', 'move one tenant to another cell')
    .argument('<tenant>', 'tenant id (partition key)')
    .action((tenant: string, flags) => start(io, flags, () => subjectOrUsage(() => tenantSubject(tenant))));

  startCommand(move, 'buckets', 'move every tenant of some buckets (e.g. 0-15,40) to another cell')
    .argument('<ranges>', 'bucket ranges: N or N-M, comma-separated')
    .action((ranges: string, flags) => start(io, flags, (count) => subjectOrUsage(() => ({ kind: 'buckets', ranges: parseRanges(ranges, count) }))));

  moveCommonOptions(
    move
      .command('plan')
      .description('run the bucket moves of a plan file (written by `cellctl mapping add-cell|drain --plan FILE`), one after another'),
  )
    .argument('<file>', 'plan file')
    .option('--reason <text>', "why (kept in each move's audit log)", '')
    .option('--copy-rate <rows>', 'rows per second the copy may take (default 20000)')
    .action((file: string, flags: MoveFlags & { reason: string }) =>
      withDeps(io, flags, async (deps, bucketCount) => {
        const plan = readPlan(file);
        const done: MoveRecord[] = [];
        const sizes = plan.moves.map((m) => ('tenant' in m ? 0 : parseRanges(m.buckets, bucketCount).reduce((n, r) => n + r.to - r.from + 1, 0)));
        const totalBuckets = sizes.reduce((a, b) => a + b, 0);
        const started = Date.now();
        let bucketsDone = 0;
        let rows = 0;
        for (const [i, step] of plan.moves.entries()) {
          const subject: MoveSubject =
            'tenant' in step ? subjectOrUsage(() => tenantSubject(step.tenant)) : { kind: 'buckets', ranges: parseRanges(step.buckets, bucketCount) };
          // A plan run again skips what already moved (the record exists and is past the flip).
          const existing = (await deps.store.list()).find(
            (m) => m.status !== 'aborted' && m.target === step.to && describeSubject(m.subject) === describeSubject(subject),
          );
          const record = existing ?? (await planMove(deps, { subject, target: step.to, reason: flags.reason || `plan ${path.basename(file)}` }));
          const result = record.status === 'active' ? await runMove(deps, record.id) : record;
          done.push(result);
          bucketsDone += sizes[i];
          rows += result.rowsCopied;
          const seconds = (Date.now() - started) / 1000;
          const left = bucketsDone < totalBuckets ? `, about ${Math.ceil((seconds / bucketsDone) * (totalBuckets - bucketsDone))} s left` : '';
          io.err(
            `plan ${i + 1}/${plan.moves.length}: ${'tenant' in step ? `tenant ${step.tenant}` : `buckets ${step.buckets}`} -> ${step.to}: ${result.status} (${result.rowsCopied} rows); ` +
              `${bucketsDone}/${totalBuckets} buckets, ${rows} rows in ${Math.round(seconds)} s (${Math.round(rows / Math.max(seconds, 0.001))} rows/s)${left}\n`,
          );
        }
        io.out(flags.json ? json(done) : formatTable(['move', 'subject', 'cells', 'status', 'step', 'rows', ''], done.map(summary)));
      }),
    );

  moveCommonOptions(move.command('list').description('every move, newest last (with --local, also while the local fleet is stopped)')).action(
    (flags: MoveFlags) =>
      withStore(io, flags, async (store) => {
        const moves = await store.list();
        moves.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
        io.out(flags.json ? json(moves) : formatTable(['move', 'subject', 'cells', 'status', 'step', 'rows', ''], moves.map(summary)));
      }),
  );

  moveCommonOptions(move.command('show').description("a move's state and its audit log (with --local, also while the local fleet is stopped)"))
    .argument('<id>', 'move id')
    .action((id: string, flags: MoveFlags) =>
      withStore(io, flags, async (store) => {
        const stored = await store.read(id);
        if (!stored)
          throw new CliError(`no move ${id} in ${store.description}; \`cellctl move list${flags.local ? ' --local' : ''}\` shows the moves`);
        const log = await store.readAudit(id);
        if (flags.json) {
          io.out(json({ move: stored.record, audit: log }));
          return;
        }
        const r = stored.record;
        io.out(
          `${r.id}: ${describeSubject(r.subject)} ${r.source} -> ${r.target}, ${r.status} at ${r.completed}; ${r.rowsCopied} rows copied in ${r.rounds} catch-up rounds\n`,
        );
        if (r.reason) io.out(`reason: ${r.reason}\n`);
        if (r.freezeMs !== undefined) io.out(`frozen for ${r.freezeMs} ms (${r.frozenAt} to ${r.unfrozenAt})\n`);
        if (r.sourceRowsDeleted !== undefined) io.out(`source copy deleted: ${r.sourceRowsDeleted} rows\n`);
        if (r.forgetAfter && r.status === 'retained') io.out(`source copy kept until ${r.forgetAfter}\n`);
        if (r.lastError) io.out(`last error: ${r.lastError}\n`);
        io.out(
          formatTable(
            ['at', 'actor', 'event', 'detail'],
            log.map((e) => [e.at, e.actor, e.event, e.detail ? JSON.stringify(e.detail) : '']),
          ),
        );
      }),
    );

  moveCommonOptions(move.command('resume').description('run a move from its last completed step (after a crash or --plan-only)'))
    .argument('<id>', 'move id')
    .option('--copy-rate <rows>', 'rows per second the copy may take (default 20000)')
    .action((id: string, flags: MoveFlags) =>
      withDeps(io, flags, async (deps) => {
        const record = await runMove(deps, id);
        io.out(flags.json ? json(record) : formatTable(['move', 'subject', 'cells', 'status', 'step', 'rows', ''], [summary(record)]));
      }),
    );

  moveCommonOptions(move.command('abort').description('undo a move that has not flipped: target copy deleted, freeze lifted'))
    .argument('<id>', 'move id')
    .option('--reason <text>', 'why (kept in the audit log)', '')
    .action((id: string, flags: MoveFlags & { reason: string }) =>
      withDeps(io, flags, async (deps) => {
        const record = await abortMove(deps, id, flags.reason);
        io.out(flags.json ? json(record) : `${id}: aborted; ${describeSubject(record.subject)} stays on ${record.source}\n`);
      }),
    );

  moveCommonOptions(move.command('forget').description('delete the source copy of a finished move once its retention has passed'))
    .argument('<id>', 'move id')
    .option('--now', 'do not wait for the retention')
    .action((id: string, flags: MoveFlags & { now?: boolean }) =>
      withDeps(io, flags, async (deps) => {
        const record = await forgetMove(deps, id, flags.now ?? false);
        const deleted = record.sourceRowsDeleted === undefined ? '' : ` (${record.sourceRowsDeleted} rows)`;
        io.out(
          flags.json
            ? json(record)
            : `${id}: ${record.status === 'finished' ? `source copy on ${record.source} deleted${deleted}` : record.status}\n`,
        );
      }),
    );

  return move;
}

function readPlan(file: string): MovePlan {
  let plan: MovePlan;
  try {
    plan = JSON.parse(readText(file)) as MovePlan;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`${file}: not valid JSON (${(error as Error).message})`);
  }
  if (
    !Array.isArray(plan?.moves) ||
    plan.moves.some(
      (m) =>
        (typeof (m as { buckets?: unknown })?.buckets !== 'string' && typeof (m as { tenant?: unknown })?.tenant !== 'string') ||
        typeof m?.to !== 'string',
    )
  ) {
    throw new CliError(
      `${file}: not a move plan; expected {"moves": [{"buckets": "0-15", "from": "cell-1", "to": "cell-5"}, …]} as \`cellctl mapping add-cell --plan\` writes`,
    );
  }
  return plan;
}
