import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { DEFAULT_PARTITION_KEY, MAX_ROUTER_SLOTS } from '../domain/fleet';
import { parseMapping } from '../domain/mapping';
// The router module (agent, S3 source, AWS SDK) loads when a router command runs, not when cellctl starts.
import type { LocalRouter } from '../runtime/router';
import { connectionLimits, MAP_FILES, ROUTER_TASK_MEMORY_MIB } from '../runtime/router/haproxy-config';
import { ROUTER_TASK_DEFAULTS, routerRoutingOf, routerStateFiles, routerTaskConfig } from '../runtime/router/task-config';
import { fleetFrom } from './context';
import { runUntilStopped } from './foreground';
import { CliError, CliIo, readText } from './io';

/** `--slots`: at least `needed` (`why` says what needs them), within what one router may have. */
function slotCount(value: string, needed: number, why: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_ROUTER_SLOTS) throw new CliError(`--slots ${value}: give an integer from 1 to ${MAX_ROUTER_SLOTS}`, 2);
  if (n < needed) throw new CliError(`--slots ${value}: ${why}; give at least ${needed}`, 2);
  return n;
}

function positive(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${flag} ${value}: give a positive integer`, 2);
  return n;
}

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new CliError(`${flag} ${value}: give a TCP port (1-65535)`, 2);
  return n;
}

/** `cellctl router …`: run a router on this machine, or render its HAProxy configuration. */
export function routerCommand(
  io: CliIo,
  signals: NodeJS.EventEmitter = process,
  parentPid: () => number = () => process.ppid,
  parentPollMs = 500,
): Command {
  const router = new Command('router').description('the HAProxy router and its mapping agent');

  router
    .command('local')
    .description('run HAProxy and the mapping agent in the foreground, serving a mapping file and re-reading it when it changes')
    .requiredOption('--mapping <file>', 'mapping document (cell endpoints such as http://127.0.0.1:9001)')
    .requiredOption('--port <port>', 'port to listen on (127.0.0.1)')
    .option('--debug-headers', 'add x-cell and x-mapping-version to responses')
    .option('--config <file>', 'fleet config (partition key, bucket count, health-check path)', 'cells.config.ts')
    .option('--slots <n>', "backend slots, the most cells the mapping may name (default: the fleet's router.slots, else 64)")
    .option('--ca-file <file>', 'CA bundle (PEM) that verifies https:// cells, for a private CA (default: the system trusted CAs)')
    .option('--ready-port <port>', 'serve readiness (what the load balancer checks) on this 127.0.0.1 port')
    .option('--start-timeout <seconds>', 'how long HAProxy may take to start (default: 10 s plus 1 s per MiB of maps it loads)')
    .action(
      async (flags: {
        mapping: string;
        port: string;
        debugHeaders?: boolean;
        config: string;
        slots?: string;
        caFile?: string;
        readyPort?: string;
        startTimeout?: string;
      }) => {
        const parent = parentPid();
        const { HAPROXY_INSTALL_HINT, HaproxyStartError, haproxyVersion, startLocalRouter } =
          // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
          require('../runtime/router') as typeof import('../runtime/router');
        const listen = port(flags.port, '--port');
        const readyPort = flags.readyPort === undefined ? undefined : port(flags.readyPort, '--ready-port');
        if (!haproxyVersion()) throw new CliError(`haproxy is not installed (or not on PATH); ${HAPROXY_INSTALL_HINT}`);
        const caFile = flags.caFile === undefined ? undefined : path.resolve(flags.caFile);
        if (caFile !== undefined) {
          if (!fs.existsSync(caFile))
            throw new CliError(
              `--ca-file ${flags.caFile}: no such file; give a PEM file with the CA certificate(s) that signed the cells' certificates`,
              2,
            );
          if (!fs.readFileSync(caFile, 'utf8').includes('-----BEGIN CERTIFICATE-----'))
            throw new CliError(`--ca-file ${flags.caFile}: not a PEM certificate bundle (no BEGIN CERTIFICATE line)`, 2);
          if (/\s/.test(caFile)) throw new CliError(`--ca-file ${flags.caFile}: HAProxy cannot take a path with spaces; move the file`, 2);
        }
        const startTimeout = flags.startTimeout === undefined ? undefined : Number(flags.startTimeout);
        if (startTimeout !== undefined && !(Number.isFinite(startTimeout) && startTimeout > 0))
          throw new CliError(`--start-timeout ${flags.startTimeout}: give a number of seconds above 0`, 2);
        const parsed = parseMapping(readText(flags.mapping));
        if (!parsed.ok) throw new CliError(`${flags.mapping} is not a valid mapping; fix it first (\`cellctl mapping validate ${flags.mapping}\`)`);
        const fleet = fs.existsSync(flags.config) ? fleetFrom(flags.config) : undefined;
        const cellCount = Object.keys(parsed.document.cells).length;
        let running: LocalRouter;
        try {
          running = await startLocalRouter({
            mappingFile: flags.mapping,
            port: listen,
            debugHeaders: flags.debugHeaders,
            partitionKey: fleet?.partitionKey ?? DEFAULT_PARTITION_KEY,
            bucketCount: parsed.document.bucketCount,
            // Home tables when the mapping or the fleet has them (a schema-1 document routes the same either way).
            homeTables: parsed.document.homes !== undefined || fleet?.homes !== undefined,
            healthCheckPath: fleet?.workload.healthCheckPath ?? '/',
            slots:
              flags.slots === undefined ? (fleet?.router.slots ?? 64) : slotCount(flags.slots, cellCount, `the mapping names ${cellCount} cells`),
            caFile,
            readyPort,
            startTimeoutMs: startTimeout === undefined ? undefined : startTimeout * 1000,
            log: (line) => io.err(`${line}\n`),
          });
        } catch (error) {
          if (error instanceof HaproxyStartError) throw new CliError(error.message);
          throw error;
        }
        io.out(
          `router listening on http://127.0.0.1:${listen} (mapping v${running.agent.version ?? '-'}, HAProxy pid ${running.haproxyPid}, state in ${running.stateDir}); Ctrl-C or SIGTERM stops it after in-flight requests finish\n`,
        );
        await runUntilStopped({ io, signals, parentPid, parent, parentPollMs, what: 'router', stop: () => running.stop() });
        io.out('router stopped\n');
      },
    );

  router
    .command('config')
    .description('print the HAProxy configuration of a router task (what the router image runs)')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--port <port>', 'listener port', String(ROUTER_TASK_DEFAULTS.port))
    .option('--state-dir <dir>', 'map files and error files', ROUTER_TASK_DEFAULTS.stateDir)
    .option(
      '--admin-socket <address>',
      'runtime API address (host:port shared with the agent container, or a unix socket path)',
      ROUTER_TASK_DEFAULTS.adminSocket,
    )
    .option('--slots <n>', "backend slots (default: the fleet's router.slots)")
    .option('--stats-port <port>', 'Prometheus exporter and stats page, on 127.0.0.1', String(ROUTER_TASK_DEFAULTS.statsPort))
    .option('--ready-port <port>', 'readiness for the load balancer (200 while a mapping is in force)', String(ROUTER_TASK_DEFAULTS.readyPort))
    .option('--debug-headers', 'add x-cell and x-mapping-version')
    .option(
      '--max-conn <n>',
      `client connections (default: what a ${ROUTER_TASK_MEMORY_MIB} MiB router task holds, ${connectionLimits(ROUTER_TASK_MEMORY_MIB).maxConn}; needs a file-descriptor limit of about twice that)`,
    )
    .option('--out-dir <dir>', 'write haproxy.cfg, 503.http and the empty map files there instead of printing the configuration')
    .action(
      (flags: {
        config: string;
        port: string;
        stateDir: string;
        adminSocket: string;
        slots?: string;
        statsPort: string;
        readyPort: string;
        debugHeaders?: boolean;
        maxConn?: string;
        outDir?: string;
      }) => {
        const fleet = fleetFrom(flags.config);
        // The renderer and the routing settings the router stacks bake into the router image: with the
        // option defaults, this prints what a router task of this fleet runs.
        const routing = routerRoutingOf(fleet);
        const slots =
          flags.slots === undefined
            ? routing.slots
            : slotCount(flags.slots, fleet.cells.length + 1, `the fleet has ${fleet.cells.length} cells, and a change needs one slot more`);
        const config = routerTaskConfig(
          { ...routing, slots },
          {
            port: port(flags.port, '--port'),
            stateDir: flags.stateDir,
            adminSocket: flags.adminSocket,
            statsPort: port(flags.statsPort, '--stats-port'),
            readyPort: port(flags.readyPort, '--ready-port'),
            debugHeaders: flags.debugHeaders,
            maxConn: flags.maxConn === undefined ? undefined : positive(flags.maxConn, '--max-conn'),
          },
        );
        if (!flags.outDir) {
          io.out(config);
          return;
        }
        fs.mkdirSync(flags.outDir, { recursive: true });
        for (const [name, content] of Object.entries(routerStateFiles(config, routing.partitionKey)))
          fs.writeFileSync(path.join(flags.outDir, name), content);
        io.out(
          `wrote haproxy.cfg, 503.http, ${Object.keys(MAP_FILES).length} map files, the readiness map and the tenant-token key slots to ${flags.outDir}\n`,
        );
      },
    );

  return router;
}
