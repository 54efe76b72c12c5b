import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { bucketCounts, parseMapping } from '../domain/mapping';
import { parseZones } from '../domain/zones';
import type { FleetReadAnswer } from '../runtime/router/fleet-read';
import { CliError, CliIo, EXIT, formatTable, json } from './io';
import { DEFAULT_LOCAL_STATE_DIR } from './move-commands';
import { readThroughLocalRouter } from './fleet-commands';

/** `cellctl status --local`: the local fleet at a glance. */
export interface LocalStatus {
  readonly stateDir: string;
  readonly running: boolean;
  readonly pid?: number;
  readonly startedAt?: string;
  readonly routerUrl: string;
  readonly mapping: { readonly file: string; readonly version: number | null; readonly inForce: number | null };
  readonly cells: readonly {
    readonly id: string;
    readonly state: string;
    readonly buckets: number;
    readonly share: number;
    readonly endpoint: string;
    /** The cell's answer to its health check through the router's fleet-wide read, or why it gave none. */
    readonly health: string;
  }[];
  readonly healthPartial: boolean;
  readonly moves: readonly { readonly id: string; readonly subject: string; readonly from: string; readonly to: string; readonly step: string }[];
  readonly drains: readonly string[];
  readonly alarms: string;
}

/** The mapping version the router serves: its `x-mapping-version` on a probe request (debug headers are on locally). */
async function versionInForce(routerUrl: string, healthCheckPath: string, header: string | undefined): Promise<number | null> {
  try {
    const response = await fetch(`${routerUrl}${healthCheckPath}`, {
      headers: header ? { [header]: 'status-probe' } : {},
      signal: AbortSignal.timeout(2000),
    });
    await response.arrayBuffer();
    const v = Number(response.headers.get('x-mapping-version'));
    return Number.isInteger(v) && v > 0 ? v : null;
  } catch {
    return null;
  }
}

/** The local fleet's status, read from its state directory, its router and (through the router) its cells. */
export async function localStatus(stateDir: string): Promise<LocalStatus> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command that does not need it never loads it
  const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { LocalMoveStore, describeSubject } = require('../operations/moves') as typeof import('../operations/moves');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const { pidRunning } = require('../domain/files') as typeof import('../domain/files');
  const file = readFleetFile(stateDir);
  if (!file) throw new CliError(`no local fleet in ${stateDir} (no fleet.json): start one with \`cellctl fleet local\`, or pass --state-dir DIR`);
  const running = pidRunning(file.pid);
  const parsed = fs.existsSync(file.mappingFile) ? parseMapping(fs.readFileSync(file.mappingFile, 'utf8')) : undefined;
  const doc = parsed?.ok ? parsed.document : undefined;
  const inForce = running
    ? await versionInForce(file.routerUrl, file.healthCheckPath, file.partitionKey.source === 'header' ? file.partitionKey.name : undefined)
    : null;
  let health: FleetReadAnswer | undefined;
  if (running && file.fleetRead) {
    // A cell's health is its answer to its health check, asked through the router.
    health = await readThroughLocalRouter(file.fleetRead, file.healthCheckPath, 1500).catch(() => undefined);
  }
  const counts = doc ? bucketCounts(doc) : new Map<string, number>();
  const total = doc ? [...counts.values()].reduce((a, b) => a + b, 0) : 0;
  const healthOf = (id: string, state: string): string => {
    if (!running) return 'fleet not running';
    if (!health) return state === 'active' ? 'not read (no fleet-wide read)' : '-';
    const answer = health.cells.find((c) => c.cell === id);
    if (answer) return `${answer.status} in ${answer.ms} ms`;
    const missing = health.missing.find((m) => m.cell === id);
    return missing ? `no answer: ${missing.reason}` : state === 'active' ? 'not asked' : `- (${state}: not asked)`;
  };
  const cells = Object.entries(doc?.cells ?? {}).map(([id, c]) => ({
    id,
    state: c.state,
    buckets: counts.get(id) ?? 0,
    share: total ? (counts.get(id) ?? 0) / total : 0,
    endpoint: c.endpoint,
    health: healthOf(id, c.state),
  }));
  const store = new LocalMoveStore(path.join(stateDir, 'moves'));
  const moves = (await store.list())
    .filter((m) => m.status === 'active')
    .map((m) => ({
      id: m.id,
      subject: describeSubject(m.subject),
      from: m.source,
      to: m.target,
      step: m.completed,
    }));
  const drains = cells.filter((c) => c.state !== 'active').map((c) => `cell ${c.id} is ${c.state}`);
  if (file.zones && fs.existsSync(file.zones.file)) {
    const zones = parseZones(fs.readFileSync(file.zones.file, 'utf8'));
    if (zones.ok) {
      for (const [zone, z] of Object.entries(zones.document.zones)) {
        if (z.weight < 100) drains.push(`zone ${zone} at weight ${z.weight}${z.reason ? ` (${z.reason})` : ''} since ${z.since}`);
      }
    }
  }
  return {
    stateDir,
    running,
    ...(running ? { pid: file.pid, startedAt: file.startedAt } : {}),
    routerUrl: file.routerUrl,
    mapping: { file: file.mappingFile, version: doc?.version ?? null, inForce },
    cells,
    healthPartial: health?.partial ?? false,
    moves,
    drains,
    alarms: 'none locally: CloudWatch alarms are AWS’s (in AWS, those in ALARM are listed here)',
  };
}

function statusText(s: LocalStatus): string {
  const out: string[] = [];
  out.push(
    `local fleet in ${s.stateDir}: ${s.running ? `running (pid ${s.pid}, since ${s.startedAt}), router ${s.routerUrl}` : 'not running (`cellctl fleet local` starts it again)'}`,
    `mapping: version ${s.mapping.version ?? 'unreadable'} in ${path.basename(s.mapping.file)}, ` +
      (s.running
        ? s.mapping.inForce === null
          ? 'none in force at the router'
          : `version ${s.mapping.inForce} in force at the router`
        : 'nothing in force'),
    '',
    formatTable(
      ['cell', 'state', 'buckets', 'share', 'health'],
      s.cells.map((c) => [c.id, c.state, c.buckets, `${(c.share * 100).toFixed(1)}%`, c.health]),
    ).trimEnd(),
    '',
    `moves in progress: ${s.moves.length === 0 ? 'none' : s.moves.map((m) => `${m.id} (${m.subject}, ${m.from} -> ${m.to}, at ${m.step})`).join('; ')}`,
    `drains: ${s.drains.length === 0 ? 'none' : s.drains.join('; ')}`,
    `alarms: ${s.alarms}`,
  );
  return `${out.join('\n')}\n`;
}

/** `cellctl status --local [--state-dir] [--json]`. */
export function statusCommand(io: CliIo): Command {
  return new Command('status')
    .description(
      'the fleet at a glance: cells with their share and health (a fleet-wide read through the router), the mapping version in force, moves in progress, drains, alarms',
    )
    .option('--local', 'the local fleet (`cellctl fleet local`): the only target so far')
    .option('--state-dir <dir>', "with --local: the local fleet's state directory", DEFAULT_LOCAL_STATE_DIR)
    .option('--json', 'print the status as JSON')
    .action(async (flags: { local?: boolean; stateDir: string; json?: boolean }) => {
      if (!flags.local)
        throw new CliError('status reads the local fleet so far: pass --local (the AWS fleet at a glance is not built yet)', EXIT.usage);
      const status = await localStatus(flags.stateDir);
      io.out(flags.json ? json(status) : statusText(status));
    });
}
