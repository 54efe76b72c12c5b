import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { ROUTED_KEY_HEADER } from '../domain/fleet';
import { bucketCounts, parseMapping } from '../domain/mapping';
import { fleetFrom } from './context';
import { runUntilStopped } from './foreground';
import { CliError, CliIo, formatTable, integerFlag as integer } from './io';
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
    .option('--lanes <n>', 'run N router lanes, each on its own port (lane 1 on --port), over the same cells (docs/lanes.md)')
    .option('--per-tenant <k>', "with --lanes: lanes in each tenant's shard", '2')
    .option('--max-overlap <m>', 'with --lanes: lanes two shards may share (default: per-tenant - 1)')
    .option(
      '--base-images <source>',
      "with --images: `pull` the Dockerfiles' base images from their registry, or build `local` stand-ins (debootstrap; no registry needed)",
      'pull',
    )
    .action(
      async (
        action: string | undefined,
        flags: {
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
          perTenant: string;
          maxOverlap?: string;
        },
      ) => {
        if (action !== undefined && action !== 'stop')
          throw new CliError(`fleet local ${action}: unknown; \`cellctl fleet local\` starts a fleet, \`cellctl fleet local stop\` stops one`, 2);
        if (action === 'stop') return stopFleet(io, flags.stateDir);
        if (flags.baseImages !== 'pull' && flags.baseImages !== 'local')
          throw new CliError(`--base-images ${flags.baseImages}: give pull or local`, 2);
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
        try {
          running = await startLocalFleet({
            cells,
            port,
            stateDir: flags.stateDir,
            fresh: flags.fresh,
            testFaults: flags.testFaults,
            images: flags.images ? { baseImages: flags.baseImages } : undefined,
            cellZero,
            lanes,
            partitionKey: config?.partitionKey,
            bucketCount: config?.bucketCount,
            healthCheckPath: config?.workload.healthCheckPath,
            log: (line) => io.err(`${line}\n`),
          });
        } catch (error) {
          throw new CliError((error as Error).message);
        }
        const mapping = parseMapping(fs.readFileSync(running.mappingFile, 'utf8'));
        const counts = mapping.ok ? bucketCounts(mapping.document) : new Map<string, number>();
        const buckets = mapping.ok ? mapping.document.bucketCount : 1;
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
        io.out(
          formatTable(
            ['cell', 'workload', 'database', 'share', 'log'],
            running.cells.map((c) => [
              c.id === running.cellZero?.id ? `${c.id} (cell zero)` : c.id,
              c.workloadUrl,
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
            `  cellctl mapping drain ${running.cellZero.id} --mapping ${shortPath(running.mappingFile)} --plan drain-${running.cellZero.id}.json && cellctl move plan drain-${running.cellZero.id}.json ${local}\n`,
          );
          io.out(`  cellctl cell-zero retire ${local}\n`);
        }
        io.out(`\ntry: curl -H '${header}: acme' -d '{"name":"x"}' ${running.routerUrl}/v1/items\n`);
        io.out('Ctrl-C or SIGTERM stops the fleet (so does the end of the process that started it)\n');
        // PostgreSQL, the workloads and HAProxy each have a watchdog too: a SIGKILL here stops them as well.
        await runUntilStopped({
          io,
          signals,
          parentPid,
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
      io.out(`  cellctl mapping add-cell ${added.id} --endpoint ${added.workloadUrl} --mapping ${mappingFile} --plan add-${added.id}.json\n`);
      io.out(`  cellctl move plan add-${added.id}.json --local --state-dir ${stateDir}\n`);
    });

  return fleet;
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
