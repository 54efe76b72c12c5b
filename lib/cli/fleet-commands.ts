import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { ROUTED_KEY_HEADER } from '../domain/fleet';
import { bucketCounts, parseMapping, totalBuckets } from '../domain/mapping';
import { fleetFrom } from './context';
import { runUntilStopped } from './foreground';
import type { FleetReadAnswer } from '../runtime/router/fleet-read';
import { progressOn } from '../domain/files';
import { CliError, CliIo, EXIT, formatTable, integerFlag as integer, writeFileAtomic } from './io';
import { laneFlags } from './lanes-commands';

/** Relative to the working directory when inside it, else absolute. */
function shortPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') ? relative : file;
}

/** `cellctl fleet …`: the whole data path on this machine. */
export function fleetCommand(
  io: CliIo,
  signals: NodeJS.EventEmitter = process,
  parentPid: () => number = () => process.ppid,
  parentPollMs = 500,
): Command {
  const fleet = new Command('fleet').description('run a fleet on this machine: cells with their databases, the router in front');

  fleet
    .command('local')
    .argument('[stop]', '`fleet local stop`: stop the fleet running from --state-dir and remove its containers')
    .description(
      'start N cells (reference workload + its own PostgreSQL) and the router (HAProxy + agent, debug headers on) in the foreground on 127.0.0.1; SIGTERM, Ctrl-C or the end of the process that started it stops everything',
    )
    .option('--cells <n>', 'number of cells (default: as many as the state directory holds, with cells added by `fleet add-cell`; else 4)')
    .option('--port <port>', 'router port on 127.0.0.1 (0: a free port)', '8080')
    .option('--state-dir <dir>', 'mapping, databases, logs and fleet.json; reused by the next start with the same --cells', '.cells-local')
    .option('--config <file>', 'fleet config for the partition key, bucket count and health-check path (when present)', 'cells.config.ts')
    .option('--fresh', 'throw the state directory away and start empty')
    .option('--test-faults', 'start the workloads with their fault hooks on (poison request, slow query): tests and benchmarks only')
    .option('--images', 'run the workloads and the router from the built images (buildah and podman, root) instead of from source')
    .option(
      '--cell-zero',
      "put the router in front of an existing service, cell zero: one more workload on its own PostgreSQL, outside the cells, holding every tenant (existing-1 …) in a database that lacks the movable-schema contract; the first mapping sends every bucket to it (docs/cell-zero.md). Its id: the config's cellZero.id, else zero",
    )
    .option(
      '--zones <n>',
      "run each cell's workload in N zones (1-3), each on its zone's loopback network, weighted by the zones document (`cellctl zone drain --local`); Linux, from source",
      '1',
    )
    .option('--lanes <n>', 'run N router lanes, each on its own port (lane 1 on --port), over the same cells (docs/lanes.md)')
    .option('--per-tenant <k>', "with --lanes: lanes in each tenant's shard", '2')
    .option('--max-overlap <m>', 'with --lanes: lanes two shards may share (default: per-tenant - 1)')
    .option(
      '--base-images <source>',
      "with --images: `pull` the Dockerfiles' base images from their registry, or build `local` stand-ins (debootstrap; no registry needed)",
      'pull',
    )
    .option(
      '--detach',
      'start the fleet in the background and return once it serves (its output in <state dir>.log); `cellctl fleet local stop` stops it',
    )
    .action(
      async (
        action: string | undefined,
        flags: {
          detach?: boolean;
          cells?: string;
          port: string;
          stateDir: string;
          config: string;
          fresh?: boolean;
          testFaults?: boolean;
          images?: boolean;
          cellZero?: boolean;
          baseImages: string;
          lanes?: string;
          zones: string;
          perTenant: string;
          maxOverlap?: string;
        },
      ) => {
        if (action !== undefined && action !== 'stop')
          throw new CliError(`fleet local ${action}: unknown; \`cellctl fleet local\` starts a fleet, \`cellctl fleet local stop\` stops one`, 2);
        if (action === 'stop') return stopFleet(io, flags.stateDir);
        if (flags.baseImages !== 'pull' && flags.baseImages !== 'local')
          throw new CliError(`--base-images ${flags.baseImages}: give pull or local`, 2);
        if (flags.detach) return detachFleet(io, flags.stateDir, (fleet.parent as unknown as { rawArgs?: string[] } | null)?.rawArgs ?? []);
        // A detached fleet (`--detach`) outlives the command that started it: no parent to follow.
        const detached = Boolean(process.env[DETACHED_ENV]);
        const parent = parentPid();
        const port = integer(flags.port, '--port', 0, 65535);
        // The local fleet (PostgreSQL client) and the router load when the command runs, not when cellctl starts.
        const { LOCAL_DATABASE, postgresBinDir, POSTGRES_INSTALL_HINT, readFleetFile, startLocalFleet } =
          // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
          require('../operations/local-fleet') as typeof import('../operations/local-fleet');
        const before = flags.fresh ? undefined : readFleetFile(flags.stateDir);
        const cells =
          flags.cells !== undefined
            ? integer(flags.cells, '--cells', 1, 64)
            : ((before ? before.cells.length - (before.cellZero ? 1 : 0) : undefined) ?? 4);
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
        const { HAPROXY_INSTALL_HINT, haproxyVersion } = require('../runtime/router') as typeof import('../runtime/router');
        if (!flags.images && !haproxyVersion()) throw new CliError(`haproxy is not installed (or not on PATH); ${HAPROXY_INSTALL_HINT}`);
        if (!postgresBinDir()) throw new CliError(`PostgreSQL server binaries not found; ${POSTGRES_INSTALL_HINT}`);
        const config = fs.existsSync(flags.config) ? fleetFrom(flags.config) : undefined;
        const cellZero = flags.cellZero ? { id: config?.cellZero?.id ?? 'zero' } : undefined;
        const lanes = flags.lanes === undefined ? undefined : laneFlags({ ...flags, lanes: flags.lanes });
        let running;
        // Steps on a terminal only; the fleet's lines (`log`) clear the progress line first.
        const progress = progressOn(io.errStream ?? { write: () => undefined });
        try {
          running = await startLocalFleet({
            onStep: (text, count) => progress.step(text, count),
            cells,
            port,
            stateDir: flags.stateDir,
            fresh: flags.fresh,
            testFaults: flags.testFaults,
            images: flags.images ? { baseImages: flags.baseImages } : undefined,
            cellZero,
            lanes,
            zones: integer(flags.zones, '--zones', 1, 3),
            partitionKey: config?.partitionKey,
            bucketCount: config?.bucketCount,
            healthCheckPath: config?.workload.healthCheckPath,
            log: (line) => {
              progress.finish();
              io.err(`${line}\n`);
            },
          });
        } catch (error) {
          progress.finish();
          throw new CliError((error as Error).message);
        }
        progress.finish(`started ${running.cells.length} cells and the router`);
        const mapping = parseMapping(fs.readFileSync(running.mappingFile, 'utf8'));
        const counts = mapping.ok ? bucketCounts(mapping.document) : new Map<string, number>();
        const buckets = mapping.ok ? totalBuckets(mapping.document) : 1;
        const header = config?.partitionKey.source === 'header' ? config.partitionKey.name : ROUTED_KEY_HEADER;
        io.out(
          `router      ${running.routerUrl}  (x-cell on every response)${running.images ? `, from ${running.images.haproxy} and ${running.images.agent}` : ''}\n`,
        );
        if (running.images) io.out(`workloads   from ${running.images.workload}\n`);
        io.out(`mapping     ${shortPath(running.mappingFile)}  (cellctl mapping … against it takes effect within a second)\n`);
        io.out(`state       ${running.fleetFile}\n\n`);
        if (running.lanes.length > 0) {
          io.out(
            formatTable(
              ['lane', 'router', 'shards'],
              running.lanes.map((l) => [l.lane, l.url, running.shards.filter((s) => s.includes(l.lane)).length]),
            ),
          );
          io.out(
            `\n${running.shards.length} shards of ${lanes!.perTenant} lanes; a tenant's lanes: cellctl lanes where TENANT --local --state-dir ${shortPath(running.stateDir)}\n\n`,
          );
        }
        if (running.zones)
          io.out(
            `zones       ${running.zones.ids.map((z) => `${z} (${running.zones!.networks[z]})`).join(', ')}; x-zone on every response; cellctl zone status --local --state-dir ${shortPath(running.stateDir)}\n\n`,
          );
        io.out(
          formatTable(
            ['cell', 'workload', 'database', 'share', 'log'],
            running.cells.map((c) => [
              c.id === running.cellZero?.id ? `${c.id} (cell zero)` : c.id,
              running.zones ? c.zones.map((z) => z.url).join(' ') : c.workloadUrl,
              `postgres://127.0.0.1:${c.database.port}/cell`,
              `${(((counts.get(c.id) ?? 0) / buckets) * 100).toFixed(1)}%`,
              shortPath(path.join(running.stateDir, 'logs', `${c.id}.log`)),
            ]),
          ),
        );
        if (running.cellZero) {
          const url = running.cellZero.database.url(LOCAL_DATABASE);
          const local = `--local --state-dir ${shortPath(running.stateDir)}`;
          io.out(
            `\n${running.cellZero.id} is cell zero, the existing service: every bucket routes to it. Make its database movable, move its tenants out, retire it (docs/cell-zero.md):\n`,
          );
          io.out(`  cellctl cell-zero check --url ${url}\n`);
          io.out(`  cellctl cell-zero check --url ${url} --sql | psql ${url} -v ON_ERROR_STOP=1\n`);
          io.out(`  cellctl move tenant existing-1 --to cell-1 ${local}\n`);
          io.out(
            `  cellctl mapping drain ${running.cellZero.id} --mapping ${shortPath(running.mappingFile)} --plan ${shortPath(path.join(running.stateDir, `drain-${running.cellZero.id}.json`))} && cellctl move plan ${shortPath(path.join(running.stateDir, `drain-${running.cellZero.id}.json`))} ${local}\n`,
          );
          io.out(`  cellctl cell-zero retire ${local}\n`);
        }
        io.out(`\ntry: curl -H '${header}: acme' -d '{"name":"x"}' ${running.routerUrl}/v1/items\n`);
        io.out(
          detached
            ? `running detached: \`cellctl fleet local stop --state-dir ${shortPath(running.stateDir)}\` stops it\n`
            : 'Ctrl-C or SIGTERM stops the fleet (so does the end of the process that started it)\n',
        );
        // PostgreSQL, the workloads and HAProxy each have a watchdog too: a SIGKILL here stops them as well.
        await runUntilStopped({
          io,
          signals,
          parentPid: detached ? () => parent : parentPid,
          parent,
          parentPollMs,
          what: 'fleet',
          stop: () => {
            io.err('stopping the fleet…\n');
            return running.stop();
          },
        });
        io.out('fleet stopped\n');
      },
    );

  fleet
    .command('add-cell')
    .description(
      'start one more cell (its own PostgreSQL and workload) in the running `cellctl fleet local`; it gets traffic once the mapping names it (the commands to run are printed)',
    )
    .option('--state-dir <dir>', "the running fleet's state directory", '.cells-local')
    .option('--json', 'print the new cell as JSON')
    .action(async (flags: { stateDir: string; json?: boolean }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { requestAddCell } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
      let added;
      try {
        added = await requestAddCell(flags.stateDir);
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      if (flags.json) {
        io.out(`${JSON.stringify(added)}\n`);
        return;
      }
      const mappingFile = shortPath(path.join(path.resolve(flags.stateDir), 'mapping.json'));
      const stateDir = shortPath(path.resolve(flags.stateDir));
      io.out(`added ${added.id}: workload ${added.workloadUrl}, database ${added.database}\n`);
      io.out(`it gets no traffic yet; to move an even share of buckets to it with their data:\n`);
      // The plan goes beside the fleet's state, not into the working directory (a checkout's root).
      const plan = shortPath(path.join(path.resolve(flags.stateDir), `add-${added.id}.json`));
      io.out(`  cellctl mapping add-cell ${added.id} --endpoint ${added.workloadUrl} --mapping ${mappingFile} --plan ${plan}\n`);
      io.out(`  cellctl move plan ${plan} --local --state-dir ${stateDir}\n`);
    });

  fleet
    .command('topology')
    .description('a picture of the fleet from the fleet file: accounts, regions and zones, routers, cells, and which routers reach which cells')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--out <file>', 'where to write it: .svg for the picture alone, else a page (.html)', 'topology.html')
    .action((flags: { config: string; out: string }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
      const { topologyHtml, topologySvg } = require('../domain/fleet') as typeof import('../domain/fleet');
      const config = fleetFrom(flags.config);
      writeFileAtomic(flags.out, flags.out.endsWith('.svg') ? topologySvg(config) : topologyHtml(config));
      io.out(`wrote ${flags.out}: ${config.cells.length} cells in ${Object.keys(config.regions).length} regions\n`);
    });

  fleet
    .command('get')
    .description(
      'a fleet-wide read through the router (scatter-gather): GET PATH of every active cell, each answer and the cells that gave none by the deadline; exit 3 when partial',
    )
    .argument('<path>', 'the path to ask every cell, with its query: /healthz, /stats?window=5m')
    .option('--local', 'the local fleet (`cellctl fleet local`): the only target so far')
    .option('--state-dir <dir>', "with --local: the running fleet's state directory", '.cells-local')
    .option('--deadline-ms <ms>', 'the whole read waits this long; a cell without an answer by then is missing', '2000')
    .option('--json', 'print the answer as JSON')
    .action(async (cellPath: string, flags: { local?: boolean; stateDir: string; deadlineMs: string; json?: boolean }) => {
      if (!flags.local)
        throw new CliError(
          'fleet get reads through a router: pass --local for the local fleet (in AWS the listener is on each router task, not behind its load balancer)',
          EXIT.usage,
        );
      const deadlineMs = integer(flags.deadlineMs, '--deadline-ms', 1, 30_000);
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
      const { fleetReadPathProblem } = require('../runtime/router/fleet-read') as typeof import('../runtime/router/fleet-read');
      const problem = fleetReadPathProblem(cellPath);
      if (problem) throw new CliError(problem, EXIT.usage);
      const file = readFleetFile(flags.stateDir);
      if (!file) throw new CliError(`no local fleet in ${flags.stateDir}: start one with \`cellctl fleet local\` (or pass --state-dir)`);
      if (!file.fleetRead)
        throw new CliError(
          `the local fleet in ${flags.stateDir} has no fleet-wide read listener (started with --images, or by an older cellctl): start it again`,
        );
      const body = await readThroughLocalRouter(file.fleetRead, cellPath, deadlineMs);
      if (flags.json) io.out(`${JSON.stringify(body, null, 2)}\n`);
      else {
        const show = (v: unknown) => {
          const text = typeof v === 'string' ? v : JSON.stringify(v);
          return text.length > 100 ? `${text.slice(0, 99)}…` : text;
        };
        io.out(
          `${body.path} from ${body.asked} active cells within ${body.deadlineMs} ms: ${body.cells.length} answered${body.partial ? `, ${body.missing.length} missing (partial)` : ''}\n`,
        );
        io.out(
          formatTable(
            ['cell', 'status', 'ms', 'answer'],
            body.cells.map((c) => [c.cell, c.status, c.ms, show(c.body)]),
          ),
        );
        for (const m of body.missing) io.out(`missing ${m.cell}: ${m.reason}\n`);
      }
      if (body.partial) throw new CliError('', EXIT.partial);
    });

  return fleet;
}

/**
 * A fleet-wide read through the local fleet's router (its listener and token file from fleet.json):
 * every active cell asked for `cellPath` within `deadlineMs`. `cellctl fleet get` and `status` read this way.
 */
export async function readThroughLocalRouter(
  listener: { readonly url: string; readonly tokenFile: string },
  cellPath: string,
  deadlineMs: number,
): Promise<FleetReadAnswer> {
  const token = fs.readFileSync(listener.tokenFile, 'utf8').trim();
  const url = new URL(`${listener.url}/fleet${cellPath}`);
  url.searchParams.set('deadlineMs', String(deadlineMs));
  let response: Response;
  try {
    response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(deadlineMs + 5000) });
  } catch (error) {
    throw new CliError(
      `the router's fleet-wide read at ${listener.url} did not answer (${(error as Error).message}): is the fleet running? (\`cellctl fleet local\`)`,
    );
  }
  const body = (await response.json()) as FleetReadAnswer & { error?: string };
  if (response.status !== 200) throw new CliError(`fleet read ${cellPath}: ${response.status} ${body.error ?? ''}`.trim());
  return body;
}

const DETACHED_ENV = 'CELLCTL_DETACHED';

/**
 * `cellctl fleet local --detach`: the same start in a process of its own session (its output in
 * `<state dir>.log`, beside the state directory a fresh start empties), returning once that fleet
 * has written fleet.json with its pid, i.e. serves; its failure is this command's, with the log's end.
 */
async function detachFleet(io: CliIo, stateDir: string, rawArgs: readonly string[]): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { packageRoot, pidRunning } = require('../domain/files') as typeof import('../domain/files');
  const running = readFleetFile(stateDir);
  if (running && pidRunning(running.pid)) {
    throw new CliError(
      `a fleet already runs from ${stateDir} (pid ${running.pid}): stop it first (\`cellctl fleet local stop --state-dir ${stateDir}\`)`,
    );
  }
  const args = rawArgs.filter((a) => a !== '--detach');
  const logFile = `${path.resolve(stateDir)}.log`;
  const fd = fs.openSync(logFile, 'w');
  const { spawn } = await import('child_process');
  const child = spawn(process.execPath, [path.join(packageRoot(__dirname), 'bin', 'cellctl.js'), ...args], {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, [DETACHED_ENV]: '1' },
  });
  fs.closeSync(fd);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.unref();
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    const file = readFleetFile(stateDir);
    if (file && file.pid === child.pid && pidRunning(file.pid)) {
      io.out(`fleet running in the background (pid ${file.pid}): router ${file.routerUrl}, state ${stateDir}, output ${logFile}\n`);
      io.out(`stop it with: cellctl fleet local stop --state-dir ${stateDir}\n`);
      return;
    }
    if (exited !== undefined || Date.now() > deadline) {
      const tail = fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-8).join('\n');
      if (exited === undefined) child.kill('SIGTERM');
      throw new CliError(
        `the fleet did not start${exited !== undefined ? ` (it exited with ${exited})` : ' within 10 minutes'}; the end of ${logFile}:\n${tail}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * `cellctl fleet local stop`: asks the fleet process running from `stateDir` to stop (SIGTERM, as
 * Ctrl-C does) and waits for it, then removes any container of that fleet still there (one killed
 * without cleanup). Nothing running is not an error.
 */
async function stopFleet(io: CliIo, stateDir: string): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { pidRunning } = require('../domain/files') as typeof import('../domain/files');
  const file = readFleetFile(stateDir);
  if (file?.pid && pidRunning(file.pid)) {
    io.err(`stopping the fleet (pid ${file.pid})…\n`);
    process.kill(file.pid, 'SIGTERM');
    const deadline = Date.now() + 120_000;
    while (pidRunning(file.pid)) {
      if (Date.now() > deadline)
        throw new CliError(`the fleet (pid ${file.pid}) did not stop within 2 minutes; kill it (kill -9 ${file.pid}) and run this again`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  if (file?.images) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
    const { removeFleetContainers } = require('../operations/local-fleet/images') as typeof import('../operations/local-fleet/images');
    const removed = await removeFleetContainers(stateDir);
    if (removed.length) io.err(`removed ${removed.length} containers left running: ${removed.join(', ')}\n`);
  }
  io.out(file ? 'fleet stopped\n' : `no local fleet in ${path.resolve(stateDir)}\n`);
}
