import * as fs from 'fs';
import { Command, Option } from 'commander';
import {
  BAKE_SECONDS_RANGE,
  cellEndpoint,
  Fleet,
  holdsBuckets,
  mappingPlacementProblems,
  movesByRegion,
  RegionMove,
  routedCells,
  seedMapping,
  suggestion,
} from '../domain/fleet';
import {
  addCell,
  bucketCounts,
  ChangeOptions,
  DEFAULT_MAX_MOVED_SHARE,
  diffMappings,
  drainCell,
  removeCell,
  formatProblems,
  guardChange,
  publishRefusals,
  InvalidKeyError,
  lookup,
  lookupMany,
  lookupInTable,
  tableCount,
  totalBuckets,
  convertToHomes,
  rehomeTable,
  LookupResult,
  homeTableOf,
  tableName,
  tableOfRegion,
  MappingChangeError,
  MappingDiff,
  MappingDocument,
  parseMapping,
  pinKey,
  quarantineKey,
  removePrefix,
  setPrefix,
  unpinKey,
  validateMapping,
} from '../domain/mapping';
// The mapping store (and the AWS SDK) load when a store command runs, not when cellctl starts.
import type { MappingStore, PublishResult } from '../adapters/mapping-store';
import { bucketMovePlan } from '../domain/moves/plan';
import { fleetFrom, mappingBucketOf, s3Client } from './context';
import { CliError, CliIo, EXIT, formatTable, json, readText, writeFileAtomic } from './io';

/** A cell's endpoint as the router stacks name it; the cell must be in the fleet config. */
function endpointFromFleet(fleet: Fleet | undefined, configPath: string, id: string): string {
  if (!fleet) throw new CliError(`no fleet file at ${configPath} to take cell \`${id}\`'s endpoint from; pass --config FILE or --endpoint URL`);
  if (!fleet.cells.some((c) => c.id === id)) {
    throw new CliError(
      `cell \`${id}\` is not in ${configPath}; add it there and push (the pipeline deploys it and links the routers), or pass --endpoint URL for a cell outside the fleet`,
    );
  }
  return cellEndpoint(fleet, id);
}

/** Reads and validates a mapping file; invalid documents are exit 1 with every problem listed. */
export function readMappingFile(file: string): MappingDocument {
  const parsed = parseMapping(readText(file));
  if (!parsed.ok) throw new CliError(`${file} is not a valid mapping:\n${formatProblems(parsed.problems)}`);
  return parsed.document;
}

/**
 * An `--endpoints` file: a JSON object of cell id → http(s) URL, for cells of the fleet. Every
 * problem is listed (exit 1); nothing is ignored silently.
 */
export function readEndpoints(file: string, cellIds: readonly string[]): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readText(file));
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`${file}: not valid JSON (${(error as Error).message}); write an object such as {"eu-1": "http://10.0.0.5:8080"}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CliError(`${file}: expected a JSON object of cell id → endpoint URL, such as {"eu-1": "http://10.0.0.5:8080"}`);
  }
  const problems: string[] = [];
  for (const [id, url] of Object.entries(parsed)) {
    if (!cellIds.includes(id)) problems.push(`\`${id}\` is not a cell of the fleet${suggestion(id, cellIds).replace('known keys', 'cells')}`);
    else if (typeof url !== 'string' || !/^https?:\/\/[^\s/]+/.test(url))
      problems.push(`${id}: ${JSON.stringify(url)} is not an http(s) URL such as http://10.0.0.5:8080`);
  }
  if (problems.length > 0)
    throw new CliError(`${file} has ${problems.length} problem(s); nothing written:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return parsed as Record<string, string>;
}

function share(buckets: number, total: number): string {
  return `${((buckets / total) * 100).toFixed(2)}%`;
}

function diffText(diff: MappingDiff, total: number): string {
  let text = `v${diff.fromVersion} -> v${diff.toVersion}: ${diff.bucketsMoved} buckets moved (${share(diff.bucketsMoved, total)} of the keyspace)\n`;
  if (diff.prefixShare > 0) {
    text += `prefix overrides changed: they cover ${(diff.prefixShare * 100).toFixed(2)}% of all valid keys (${(diff.movedShare * 100).toFixed(2)}% moved in all, against the guard); tenants sharing a prefix can be far more\n`;
  }
  if (diff.moves.length > 0)
    text += formatTable(
      ['from', 'to', 'buckets', 'share'],
      diff.moves.map((m) => [m.from, m.to, m.buckets, share(m.buckets, total)]),
    );
  if (diff.overrides.length > 0) {
    text += formatTable(
      ['override', 'key', 'before', 'after'],
      diff.overrides.map((o) => [o.kind, o.key, o.before ?? '-', o.after ?? '-']),
    );
  }
  for (const c of diff.stateChanges) text += `cell ${c.cell}: ${c.before} -> ${c.after}\n`;
  for (const c of diff.cellsAdded) text += `cell ${c}: added\n`;
  for (const c of diff.cellsRemoved) text += `cell ${c}: removed\n`;
  return text;
}

export interface ChangeFlags {
  readonly mapping: string;
  readonly out?: string;
  readonly force?: boolean;
  readonly maxMove: string;
  readonly json?: boolean;
  /** add-cell and drain: write the bucket moves here instead of re-routing buckets without their data. */
  readonly plan?: string;
  /** add-cell and drain: re-route buckets without moving data (stateless workloads only). */
  readonly routingOnly?: boolean;
  /** The fleet file whose tiers and dedicated cells the change must respect. @default cells.config.ts when it exists */
  readonly config?: string;
}

const DEFAULT_CONFIG = 'cells.config.ts';

/**
 * The fleet a change is checked against: `--config` (its problems are the command's error), else
 * cells.config.ts where it exists, else none (a mapping of cells outside any fleet file). A
 * cells.config.ts that does not load (before `cellctl accounts ensure`, say) is named on stderr and
 * the change goes on unchecked, as it would without the file.
 */
function fleetOfChange(io: CliIo, flags: Pick<ChangeFlags, 'config'>): Fleet | undefined {
  if (flags.config !== undefined) return fleetFrom(flags.config);
  if (!fs.existsSync(DEFAULT_CONFIG)) return undefined;
  try {
    return fleetFrom(DEFAULT_CONFIG);
  } catch (error) {
    io.err(
      `warning: ${DEFAULT_CONFIG} does not load, so this change is not checked against its tiers and dedicated cells (pass --config FILE to require it): ${(error as Error).message.split('\n')[0]}\n`,
    );
    return undefined;
  }
}

/**
 * What `after` breaks of the fleet's tiers and dedicated cells that `before` did not: another
 * tenant pinned to a dedicated cell, buckets given to one or to another tier's cell. Not forcible:
 * the fleet file says which cells are whose, and changing that is the fix.
 */
function placementRefusals(fleet: Fleet | undefined, before: MappingDocument, after: MappingDocument): string[] {
  if (!fleet) return [];
  const already = new Set(mappingPlacementProblems(fleet, before));
  return mappingPlacementProblems(fleet, after).filter((p) => !already.has(p));
}

/**
 * add-cell and drain on a stateful fleet: the buckets' data must move with them. With `--plan`,
 * the routing change becomes a plan of bucket moves (run by `cellctl move plan`) and the mapping
 * only gains what the moves need (a new cell, without buckets yet); with `--routing-only` the
 * buckets are re-routed without their data, said loudly on stderr.
 */
function bucketMoveMode(
  io: CliIo,
  flags: ChangeFlags,
  before: MappingDocument,
  after: MappingDocument,
  beforeMoves: () => MappingDocument | undefined,
): MappingDocument | undefined {
  const plan = bucketMovePlan(before, after);
  if (plan.moves.length === 0) return after;
  const buckets = plan.moves.reduce((n, m) => n + ('bucketCount' in m ? m.bucketCount : 0), 0);
  if (flags.plan && flags.routingOnly) throw new CliError('give --plan FILE or --routing-only, not both', EXIT.usage);
  if (flags.routingOnly) return after; // runChange warns once the document is written
  if (!flags.plan) {
    throw new CliError(
      `this change re-routes ${buckets} buckets (${plan.moves.length} cell pairs); their data must move with them: pass --plan FILE to write the bucket moves (then run \`cellctl move plan FILE\`), or --routing-only for a stateless workload`,
      EXIT.usage,
    );
  }
  writeFileAtomic(flags.plan, `${JSON.stringify(plan, null, 2)}\n`);
  io.err(`wrote ${flags.plan}: ${plan.moves.length} bucket moves (${buckets} buckets); run \`cellctl move plan ${flags.plan}\`\n`);
  return beforeMoves();
}

/**
 * pin, unpin and quarantine on a stateful fleet: a key routed to another cell loses sight of its
 * rows there. With `--plan`, the change becomes a tenant move (run by `cellctl move plan`, whose flip
 * pins the key) and the mapping is not changed; with `--routing-only` the key is re-routed without
 * its data. A key already routed to that cell needs neither.
 */
function keyMoveMode(io: CliIo, flags: ChangeFlags, before: MappingDocument, after: MappingDocument, key: string): 'change' | 'planned' {
  const from = lookup(before, key).cell;
  const to = lookup(after, key).cell;
  if (from === to) return 'change';
  if (flags.plan && flags.routingOnly) throw new CliError('give --plan FILE or --routing-only, not both', EXIT.usage);
  if (flags.routingOnly) {
    io.err(
      `ROUTING ONLY: key ${key} now routes to ${to} WITHOUT its data (its rows stay on ${from}). Only a stateless workload may do this; to move the data, use --plan FILE and \`cellctl move plan FILE\`.\n`,
    );
    return 'change';
  }
  if (!flags.plan) {
    throw new CliError(
      `this change routes key ${key} from ${from} to ${to}; its data must move with it: pass --plan FILE to write the tenant move (then run \`cellctl move plan FILE\`, which pins it), or --routing-only for a stateless workload`,
      EXIT.usage,
    );
  }
  writeFileAtomic(flags.plan, `${JSON.stringify({ mappingVersion: before.version, moves: [{ tenant: key, from, to }] }, null, 2)}\n`);
  io.err(`wrote ${flags.plan}: a tenant move (${key}: ${from} -> ${to}); run \`cellctl move plan ${flags.plan}\`\n`);
  return 'planned';
}

/**
 * prefix (set or removed) on a stateful fleet: it re-routes every key it covers, which no single
 * move can carry (a move takes a tenant or buckets); refused unless `--routing-only`.
 */
function prefixMoveMode(io: CliIo, flags: ChangeFlags, prefix: string): void {
  if (flags.routingOnly) {
    io.err(`ROUTING ONLY: every key starting with ${prefix} now routes by the new rule WITHOUT its data. Only a stateless workload may do this.\n`);
    return;
  }
  throw new CliError(
    `a prefix re-routes every key starting with ${prefix}, without its data: move those tenants first (\`cellctl move tenant KEY --to CELL\`, which pins each), or pass --routing-only for a stateless workload`,
    EXIT.usage,
  );
}

function maxMoveShare(value: string): number {
  const percent = Number(value);
  if (!Number.isFinite(percent) || percent <= 0 || percent > 100) throw new CliError(`--max-move ${value}: give a percentage from 0 to 100`, 2);
  return percent / 100;
}

/**
 * Applies a change to the `--mapping` document and writes the result to `--out` (default: in place).
 * The result is validated and guarded first: nothing is written when it is invalid or refused.
 */
export function runChange(
  io: CliIo,
  flags: ChangeFlags,
  change: (doc: MappingDocument, options: ChangeOptions) => MappingDocument,
  moves?: (doc: MappingDocument, options: ChangeOptions) => MappingDocument | undefined,
  guard?: (before: MappingDocument, after: MappingDocument) => 'change' | 'planned',
  /** The fleet already loaded for the change (add-cell, drain); else `fleetOfChange`. */
  fleet?: Fleet,
): void {
  const maxMovedShare = maxMoveShare(flags.maxMove);
  const before = readMappingFile(flags.mapping);
  let after: MappingDocument;
  try {
    const options = { now: new Date().toISOString() };
    after = change(before, options);
    if (moves) {
      const instead = bucketMoveMode(io, flags, before, after, () => moves(before, options));
      if (instead === undefined) {
        io.out(
          flags.json
            ? json({ file: null, version: before.version, plan: flags.plan })
            : `${flags.mapping} unchanged (v${before.version}); the plan moves the buckets\n`,
        );
        return;
      }
      after = instead;
    }
    if (guard && guard(before, after) === 'planned') {
      io.out(
        flags.json
          ? json({ file: null, version: before.version, plan: flags.plan })
          : `${flags.mapping} unchanged (v${before.version}); the plan moves the tenant\n`,
      );
      return;
    }
  } catch (error) {
    if (error instanceof MappingChangeError) throw new CliError(error.message);
    throw error;
  }
  const problems = validateMapping(after, { previousVersion: before.version });
  if (problems.length > 0) throw new CliError(`the change would produce an invalid document; nothing written:\n${formatProblems(problems)}`);
  const placement = placementRefusals(fleet ?? fleetOfChange(io, flags), before, after);
  if (placement.length > 0)
    throw new CliError(`change refused by the fleet's tiers and dedicated cells; nothing written:\n${placement.map((r) => `  - ${r}`).join('\n')}`);
  const refusals = guardChange(before, after, { maxMovedShare });
  if (refusals.length > 0 && !flags.force) throw new CliError(`change refused; nothing written:\n${refusals.map((r) => `  - ${r}`).join('\n')}`);
  const out = flags.out ?? flags.mapping;
  writeFileAtomic(out, `${JSON.stringify(after, null, 2)}\n`);
  const diff = diffMappings(before, after);
  if (flags.routingOnly && diff.bucketsMoved > 0 && moves) {
    io.err(
      `ROUTING ONLY: ${diff.bucketsMoved} buckets now route to another cell WITHOUT their data. Only a stateless workload may do this; on a stateful one those tenants lose sight of their rows. To move the data, use --plan FILE and \`cellctl move plan FILE\`.\n`,
    );
  }
  io.out(flags.json ? json({ file: out, version: after.version, diff }) : `${diffText(diff, after.bucketCount)}wrote ${out} (v${after.version})\n`);
}

function changeCommand(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .requiredOption(MAPPING_OPTION[0], 'the current mapping document')
    .option('--out <file>', 'where to write the new document (default: --mapping, in place)')
    .option('--force', 'apply even if the guard rail refuses the change')
    .option('--max-move <percent>', 'largest share of the keyspace one change may move', String(DEFAULT_MAX_MOVED_SHARE * 100))
    .option('--config <file>', `the fleet file whose tiers and dedicated cells the change must respect (default: ${DEFAULT_CONFIG} where it exists)`)
    .option('--json', 'print the result as JSON');
}

interface StoreFlags {
  readonly config: string;
  readonly bucket?: string;
  readonly bake?: string;
  readonly group?: string;
  readonly forcePathStyle?: boolean;
  readonly region?: string;
  readonly json?: boolean;
}

function storeCommand(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--bucket <name>', "one mapping bucket (default: every region's, named by the SSM parameter /<app>/router/mapping-bucket of each region)")
    .option('--bake <seconds>', "seconds between the first router group and the rest (default: the fleet's router.publishBakeSeconds)")
    .option('--force-path-style', 'path-style S3 addressing, for S3-compatible servers')
    .option('--region <region>', "with --bucket: the bucket's region (default: AWS_REGION, else the first fleet region)")
    .option('--json', 'print the result as JSON');
}

/**
 * The mapping buckets to work on: `--bucket` alone, or every fleet region's bucket (each region's
 * routers read only their own), found through each region's SSM parameter. The first is where
 * history and rollback read from.
 */
async function openStores(flags: StoreFlags): Promise<{ stores: MappingStore[]; fleet: Fleet; bakeSeconds: number }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { MappingStore } = require('../adapters/mapping-store') as typeof import('../adapters/mapping-store');
  const fleet = fleetFrom(flags.config);
  const bakeSeconds = flags.bake === undefined ? fleet.router.publishBakeSeconds : Number(flags.bake);
  // Bounded as router.publishBakeSeconds is: a bake past a day is a typo that would hold the publish
  // (the canary group on the new version, the rest on the old) until someone kills it.
  if (!Number.isInteger(bakeSeconds) || bakeSeconds < 0 || bakeSeconds > BAKE_SECONDS_RANGE.max)
    throw new CliError(`--bake ${flags.bake}: give whole seconds from 0 to ${BAKE_SECONDS_RANGE.max} (a day)`, 2);
  if (flags.bucket) {
    const client = s3Client({ forcePathStyle: flags.forcePathStyle, region: flags.region }, fleet.router.homeRegion);
    return { stores: [new MappingStore(client, flags.bucket)], fleet, bakeSeconds };
  }
  const stores = await Promise.all(
    Object.keys(fleet.regions).map(async (region) => {
      const bucket = await mappingBucketOf(fleet, region);
      return new MappingStore(s3Client({ forcePathStyle: flags.forcePathStyle, region }, region), bucket);
    }),
  );
  return { stores, fleet, bakeSeconds };
}

async function storeAction<T>(run: (store: typeof import('../adapters/mapping-store')) => Promise<T>): Promise<T> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const module = require('../adapters/mapping-store') as typeof import('../adapters/mapping-store');
  const { ConcurrentWriteError, PublishRefusedError, StoreError } = module;
  try {
    return await run(module);
  } catch (error) {
    if (error instanceof PublishRefusedError || error instanceof ConcurrentWriteError || error instanceof StoreError)
      throw new CliError(error.message);
    throw error;
  }
}

/**
 * Every mapping command names its files the same way: the document it reads is `--mapping FILE`, the
 * one it writes `--out FILE`, the fleet `--config FILE`. show, validate, publish and diff also take
 * their documents as arguments (`mapping show FILE`, `mapping diff OLD NEW`).
 */
const MAPPING_OPTION = ['--mapping <file>', 'the mapping document'] as const;

/** The document of `--mapping FILE` or of the FILE argument; exactly one of them. */
function mappingFileOf(command: string, argument: string | undefined, option: string | undefined): string {
  if (argument !== undefined && option !== undefined && argument !== option) {
    throw new CliError(
      `give the mapping document once: \`cellctl mapping ${command} --mapping FILE\` (got ${argument} and --mapping ${option})`,
      EXIT.usage,
    );
  }
  const file = option ?? argument;
  if (file === undefined) throw new CliError(`no mapping document: \`cellctl mapping ${command} --mapping FILE\``, EXIT.usage);
  return file;
}

function publishText(result: PublishResult): string {
  return formatTable(
    ['group', 'before', 'after', 'status'],
    result.groups.map((g) => [g.group, g.previousVersion === undefined ? '-' : `v${g.previousVersion}`, `v${result.version}`, g.status]),
  );
}

/** `cellctl mapping …`: build, inspect, change and publish the partition-key → cell mapping. */
export function mappingCommand(io: CliIo): Command {
  const mapping = new Command('mapping').description('build, inspect, change and publish the partition-key → cell mapping');

  mapping
    .command('init')
    .description(
      'create version 1 from the fleet: buckets spread over active regular cells, internal- tenants on the canary (with a cell zero: every bucket on it)',
    )
    .requiredOption('--out <file>', 'where to write the document')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--endpoints <file>', 'JSON object of cell id → endpoint URL (default: router.cellEndpointTemplate, as the router stacks seed it)')
    .option('--force', 'overwrite --out if it exists')
    .option('--json', 'print the result as JSON')
    .action((flags: { out: string; config: string; endpoints?: string; force?: boolean; json?: boolean }) => {
      if (fs.existsSync(flags.out) && !flags.force) throw new CliError(`${flags.out} exists; pass --force to overwrite it`);
      const fleet = fleetFrom(flags.config);
      const endpoints = flags.endpoints
        ? readEndpoints(
            flags.endpoints,
            routedCells(fleet).map((c) => c.id),
          )
        : {};
      // Without --endpoints, exactly the document the router stacks seed (so publishing it is a no-op).
      const seed = seedMapping(fleet);
      const doc = {
        ...seed,
        cells: Object.fromEntries(Object.entries(seed.cells).map(([id, c]) => [id, { ...c, endpoint: endpoints[id] ?? c.endpoint }])),
      };
      const problems = validateMapping(doc);
      if (problems.length > 0) throw new CliError(`the fleet does not make a valid mapping; nothing written:\n${formatProblems(problems)}`);
      writeFileAtomic(flags.out, `${JSON.stringify(doc, null, 2)}\n`);
      io.out(
        flags.json
          ? json({ file: flags.out, version: doc.version })
          : `wrote ${flags.out} (v1, ${doc.bucketCount} buckets over ${doc.buckets.length} cells)\n`,
      );
    });

  mapping
    .command('show')
    .description('buckets and keyspace share per cell, and the overrides')
    .option(...MAPPING_OPTION)
    .argument('[file]', 'the mapping document (same as --mapping FILE)')
    .option('--json', 'print as JSON')
    .option(
      '--by-region',
      "per region of the fleet file: each cell's shape, its share of the region's buckets and its shape's share of the region's tested capacity",
    )
    .option('--config <file>', 'with --by-region: the fleet file', 'cells.config.ts')
    .action((argument: string | undefined, flags: { mapping?: string; json?: boolean; byRegion?: boolean; config: string }) => {
      const doc = readMappingFile(mappingFileOf('show', argument, flags.mapping));
      if (flags.byRegion) {
        const regions = mappingByRegion(doc, fleetFrom(flags.config));
        io.out(flags.json ? json({ version: doc.version, bucketCount: doc.bucketCount, regions }) : byRegionText(doc, regions));
        return;
      }
      const counts = bucketCounts(doc);
      const rows = Object.entries(doc.cells).map(([id, c]) => ({
        cell: id,
        state: c.state,
        endpoint: c.endpoint,
        buckets: counts.get(id) ?? 0,
        share: (counts.get(id) ?? 0) / totalBuckets(doc),
        exact: Object.values(doc.overrides.exact).filter((x) => x === id).length,
        prefixes: Object.entries(doc.overrides.prefix)
          .filter(([, x]) => x === id)
          .map(([p]) => p),
      }));
      if (flags.json) {
        io.out(json({ version: doc.version, createdAt: doc.createdAt, bucketCount: doc.bucketCount, cells: rows }));
        return;
      }
      io.out(`version ${doc.version} (${doc.createdAt}), ${bucketsText(doc)}\n`);
      io.out(
        formatTable(
          ['cell', 'state', 'buckets', 'share', 'pinned keys', 'prefixes', 'endpoint'],
          rows.map((r) => [r.cell, r.state, r.buckets, share(r.buckets, totalBuckets(doc)), r.exact, r.prefixes.join(',') || '-', r.endpoint]),
        ),
      );
    });

  mapping
    .command('where')
    .description('which cell a key goes to, and why; or, with --keys, every key of a file (one per line)')
    .argument('[key]', 'partition key')
    .requiredOption(...MAPPING_OPTION)
    .option('--keys <file>', 'route every key of this file (one per line; blank lines skipped) instead of one key')
    .option(
      '--region <region>',
      'with home regions: where the key lands as a tenant whose home is REGION (its table), whatever its prefix says; every line then names that home',
    )
    .option('--json', 'print {"key","bucket","cell","via","home"} (with --keys, one such line per key)')
    .action((key: string | undefined, flags: { mapping: string; keys?: string; region?: string; json?: boolean }) => {
      if ((key === undefined) === (flags.keys === undefined))
        throw new CliError('give either a key or --keys FILE: `cellctl mapping where KEY --mapping FILE`', EXIT.usage);
      const keys =
        key !== undefined
          ? [key]
          : readText(flags.keys!)
              .split(/\r?\n/)
              .filter((line) => line !== '');
      const doc = readMappingFile(flags.mapping);
      let table: number | undefined;
      if (flags.region !== undefined) {
        table = tableOfRegion(doc.homes, flags.region);
        if (table === undefined)
          throw new CliError(
            `--region ${flags.region}: no home table of ${flags.mapping} holds it (tables: ${doc.homes!.tables.map((t) => t.regions.join('+')).join(', ')})`,
            EXIT.usage,
          );
      }
      let results;
      try {
        results = lookupMany(doc, keys).map((r) => (table === undefined ? r : lookupInTable(doc, r, table)));
      } catch (error) {
        if (error instanceof InvalidKeyError)
          throw new CliError(`invalid key${flags.keys ? ` in ${flags.keys}` : ''}: ${error.message}; nothing routed`);
        throw error;
      }
      const tableOf = homeTableOf(doc.homes);
      const homeText = (r: LookupResult) => tableName(doc.homes, table ?? tableOf(r.key));
      if (table !== undefined && !flags.json) {
        const other = results.filter((r) => tableOf(r.key) !== table);
        if (other.length > 0)
          io.err(
            `${other.length === 1 ? `key ${other[0].key}` : `${other.length} keys`} start with another home region's prefix: routers route ${other.length === 1 ? 'it' : 'them'} to ${tableName(doc.homes, tableOf(other[0].key))}; shown as tenants of ${flags.region}\n`,
          );
      }
      if (flags.json) {
        io.out(results.map((r) => `${JSON.stringify(doc.homes ? { ...r, home: homeText(r) } : r)}\n`).join(''));
        return;
      }
      io.out(
        formatTable(
          ['key', 'bucket', 'cell', 'via', ...(doc.homes ? ['home'] : [])],
          results.map((r) => [r.key, r.bucket, r.cell, r.via, ...(doc.homes ? [homeText(r)] : [])]),
        ),
      );
      if (flags.keys) {
        const perCell = new Map<string, number>();
        for (const r of results) perCell.set(r.cell, (perCell.get(r.cell) ?? 0) + 1);
        io.out(
          `\n${formatTable(
            ['cell', 'keys'],
            [...perCell].sort((a, b) => a[0].localeCompare(b[0])),
          )}`,
        );
      }
    });

  changeCommand(
    mapping,
    'add-cell',
    "add a cell: it takes its shape's share of the buckets (by tested rate, when the fleet file names it and every holder; else an even share) from the others, nothing else moves",
  )
    .argument('<id>', 'cell id (in cells.config.ts)')
    .option(
      '--endpoint <url>',
      "the cell's endpoint as the routers reach it (default: from the fleet, router.cellEndpointTemplate, which the router stacks name)",
    )
    .option('--quarantine', 'add a quarantine cell (no buckets; takes quarantined keys)')
    .option('--plan <file>', 'write the bucket moves to FILE (run them with `cellctl move plan FILE`); the mapping gains the cell without buckets')
    .option('--routing-only', 're-route the buckets without moving their data (stateless workloads only)')
    .action((id: string, flags: ChangeFlags & { endpoint?: string; quarantine?: boolean }) => {
      const fleet = fleetOfChange(io, flags);
      const named = fleet?.cells.find((c) => c.id === id);
      const cell = {
        id,
        endpoint: flags.endpoint ?? endpointFromFleet(fleet, flags.config ?? DEFAULT_CONFIG, id),
        state: flags.quarantine ? ('quarantine' as const) : ('active' as const),
        // Another tier's cell, or one dedicated to a tenant, joins without buckets: nobody lands there unplaced.
        holdsBuckets: fleet && named ? holdsBuckets(fleet, named) : true,
        // With home tables it takes buckets of its own region's table only.
        ...(named ? { region: named.region } : {}),
      };
      runChange(
        io,
        flags,
        (doc, o) => addCell(doc, cell, o, fleet ? shapeWeights(fleet) : undefined),
        (doc, o) => ({
          ...doc,
          version: doc.version + 1,
          createdAt: o.now,
          cells: { ...doc.cells, [id]: { endpoint: cell.endpoint, state: cell.state, ...(doc.homes ? { region: cell.region } : {}) } },
        }),
        undefined,
        fleet,
      );
      if (named?.dedicatedTo !== undefined && !flags.json)
        io.err(
          `${id} is dedicated to ${named.dedicatedTo}: it holds no buckets; pin its tenant there with its data: \`cellctl mapping pin ${named.dedicatedTo} ${id} --mapping ${flags.out ?? flags.mapping} --plan pin-${named.dedicatedTo}.json\`, then \`cellctl move plan pin-${named.dedicatedTo}.json\`\n`,
        );
      else if (named && !cell.holdsBuckets && !flags.quarantine && !flags.json)
        io.err(
          `${id} is of tier ${named.tier}: it holds no buckets; its tenants come by \`cellctl place TENANT --expected-rps R --tier ${named.tier}\`\n`,
        );
    });

  changeCommand(mapping, 'drain', 'drain a cell: its buckets spread over the other cells; it becomes draining')
    .argument('<id>', 'cell id')
    .option('--plan <file>', 'write the bucket moves to FILE (run them with `cellctl move plan FILE`, then drain again); the mapping is not changed')
    .option('--routing-only', 're-route the buckets without moving their data (stateless workloads only)')
    .action((id: string, flags: ChangeFlags) => {
      const fleet = fleetOfChange(io, flags);
      // Its buckets go only to cells that may hold them: the default tier's, never a dedicated cell (a cell the fleet does not name may).
      const byId = new Map(fleet?.cells.map((c) => [c.id, c]));
      const canReceive = (cell: string) => !fleet || !byId.has(cell) || holdsBuckets(fleet, byId.get(cell)!);
      runChange(
        io,
        flags,
        (doc, o) => drainCell(doc, id, o, canReceive),
        () => undefined,
        undefined,
        fleet,
      );
    });

  changeCommand(
    mapping,
    'convert',
    "give the mapping the fleet file's home regions (schema 2): every home table starts as a copy of today's buckets, so no tenant moves; then `rehome` each region",
  ).action((flags: ChangeFlags) => {
    const fleet = fleetFrom(flags.config ?? DEFAULT_CONFIG);
    if (fleet.homes === undefined)
      throw new CliError(
        `${flags.config ?? DEFAULT_CONFIG} has no \`homes\`: say where tenants live (homes.defaultRegion, homes.prefixes) first`,
        EXIT.usage,
      );
    const regionOf = (id: string) => (fleet.cellZero?.id === id ? fleet.cellZero.region : fleet.cells.find((c) => c.id === id)?.region);
    runChange(io, flags, (doc, o) => convertToHomes(doc, fleet.homes!, regionOf, o), undefined, undefined, fleet);
    if (!flags.json)
      io.err(
        "next: deploy the routers with the fleet's homes before publishing this document (a router without them keeps its last-known-good); then `cellctl mapping rehome REGION` for each region\n",
      );
  });

  changeCommand(
    mapping,
    'rehome',
    "give a region's home table to its own cells: the table's buckets on other regions' cells move to the region's cells (by shape), only that table's tenants move",
  )
    .argument('<region>', 'the home region whose table to bring home')
    .option('--plan <file>', 'write the bucket moves to FILE (run them with `cellctl move plan FILE`, then rehome again); the mapping is not changed')
    .option('--routing-only', 're-route the buckets without moving their data (stateless workloads only)')
    .action((region: string, flags: ChangeFlags) => {
      const fleet = fleetOfChange(io, flags);
      const byId = new Map(fleet?.cells.map((c) => [c.id, c]));
      const canReceive = (cell: string) => !fleet || !byId.has(cell) || holdsBuckets(fleet, byId.get(cell)!);
      runChange(
        io,
        flags,
        (doc, o) => rehomeTable(doc, region, o, canReceive, fleet ? shapeWeights(fleet) : undefined),
        () => undefined,
        undefined,
        fleet,
      );
    });

  changeCommand(
    mapping,
    'remove-cell',
    'remove a cell nothing routes to (no bucket, no pin, no prefix): the routers drop it; refused while anything still routes there',
  )
    .argument('<id>', 'cell id')
    .action((id: string, flags: ChangeFlags) => runChange(io, flags, (doc, o) => removeCell(doc, id, o)));

  const keyMove = (command: Command) =>
    command
      .option(
        '--plan <file>',
        'write the tenant move to FILE (run it with `cellctl move plan FILE`; its flip pins the key); the mapping is not changed',
      )
      .option('--routing-only', 're-route the key without moving its data (stateless workloads only)');

  keyMove(changeCommand(mapping, 'pin', 'pin one exact key to a cell'))
    .argument('<key>', 'partition key')
    .argument('<cell>', 'cell id')
    .action((key: string, cell: string, flags: ChangeFlags) =>
      runChange(
        io,
        flags,
        (doc, o) => pinKey(doc, key, cell, o),
        undefined,
        (b, a) => keyMoveMode(io, flags, b, a, key),
      ),
    );

  keyMove(changeCommand(mapping, 'unpin', 'remove an exact pin'))
    .argument('<key>', 'partition key')
    .action((key: string, flags: ChangeFlags) =>
      runChange(
        io,
        flags,
        (doc, o) => unpinKey(doc, key, o),
        undefined,
        (b, a) => keyMoveMode(io, flags, b, a, key),
      ),
    );

  changeCommand(mapping, 'prefix', 'send every key with a prefix to a cell (or --remove the prefix override)')
    .argument('<prefix>', 'key prefix')
    .argument('[cell]', 'cell id')
    .option('--remove', 'remove the prefix override')
    .option('--routing-only', 're-route the keys without moving their data (stateless workloads only)')
    .action((prefix: string, cell: string | undefined, flags: ChangeFlags & { remove?: boolean }) => {
      if (!flags.remove && cell === undefined) throw new CliError('give a CELL, or --remove to delete the prefix override', 2);
      runChange(
        io,
        flags,
        (doc, o) => (flags.remove ? removePrefix(doc, prefix, o) : setPrefix(doc, prefix, cell!, o)),
        undefined,
        () => {
          prefixMoveMode(io, flags, prefix);
          return 'change';
        },
      );
    });

  keyMove(changeCommand(mapping, 'quarantine', "pin a key to the quarantine cell (the mapping's only one, or --cell)"))
    .argument('<key>', 'partition key')
    .option('--cell <id>', 'quarantine cell')
    .action((key: string, flags: ChangeFlags & { cell?: string }) =>
      runChange(
        io,
        flags,
        (doc, o) => quarantineKey(doc, key, { ...o, cell: flags.cell }),
        undefined,
        (b, a) => keyMoveMode(io, flags, b, a, key),
      ),
    );

  mapping
    .command('validate')
    .description('check a document; exit 1 listing every problem')
    .option(...MAPPING_OPTION)
    .argument('[file]', 'the mapping document (same as --mapping FILE)')
    .option('--previous <file>', 'the document it replaces (its version must be greater)')
    .option('--config <file>', "fleet config: the document must have the fleet's bucket count", 'cells.config.ts')
    .option('--json', 'print {"valid", "problems"}')
    .action((argument: string | undefined, flags: { mapping?: string; previous?: string; config: string; json?: boolean }) => {
      const file = mappingFileOf('validate', argument, flags.mapping);
      const previousVersion = flags.previous ? readMappingFile(flags.previous).version : undefined;
      const text = readText(file);
      const parsed = parseMapping(text, { previousVersion, bucketCount: fleetFrom(flags.config).bucketCount });
      if (flags.json) io.out(json({ valid: parsed.ok, problems: parsed.ok ? [] : parsed.problems }));
      if (!parsed.ok) throw new CliError(flags.json ? '' : `${file} is not a valid mapping:\n${formatProblems(parsed.problems)}`);
      if (!flags.json)
        io.out(
          `${file}: valid (v${parsed.document.version}, ${parsed.document.bucketCount} buckets, ${Object.keys(parsed.document.cells).length} cells)\n`,
        );
    });

  mapping
    .command('diff')
    .description('buckets moved per cell pair, share of the keyspace moved, overrides changed')
    .option('--previous <file>', 'the older document')
    .option(MAPPING_OPTION[0], 'the newer document')
    .argument('[old]', 'the older document (same as --previous FILE)')
    .argument('[new]', 'the newer document (same as --mapping FILE)')
    .option('--json', 'print as JSON')
    .option('--by-region', 'also count the moves by the regions of their cells (the fleet file): within a region, and across regions')
    .option('--config <file>', 'with --by-region: the fleet file', 'cells.config.ts')
    .action(
      (
        oldArgument: string | undefined,
        newArgument: string | undefined,
        flags: { previous?: string; mapping?: string; json?: boolean; byRegion?: boolean; config: string },
      ) => {
        // Arguments fill what the options leave out: `diff OLD NEW`, `diff --previous OLD NEW`, `diff --previous OLD --mapping NEW`.
        const args = [oldArgument, newArgument].filter((a): a is string => a !== undefined);
        const oldFile = flags.previous ?? args.shift();
        const newFile = flags.mapping ?? args.shift();
        if (oldFile === undefined || newFile === undefined || args.length > 0) {
          throw new CliError('give the two documents as `cellctl mapping diff --previous OLD --mapping NEW`', EXIT.usage);
        }
        const before = readMappingFile(oldFile);
        const after = readMappingFile(newFile);
        if (before.bucketCount !== after.bucketCount)
          throw new CliError(`bucketCount differs (${before.bucketCount} vs ${after.bucketCount}): every key would move`);
        const diff = diffMappings(before, after);
        const regions = flags.byRegion ? movesByRegion(before, after, fleetFrom(flags.config)) : undefined;
        if (flags.json) {
          io.out(json(regions ? { ...diff, regions } : diff));
          return;
        }
        io.out(diffText(diff, after.bucketCount));
        if (regions) io.out(regionMovesText(regions));
      },
    );

  storeCommand(
    mapping,
    'publish',
    'publish to the mapping bucket: mappings/v<version>.json, then each router group in order with a bake after the first',
  )
    .option(...MAPPING_OPTION)
    .argument('[file]', 'the mapping document (same as --mapping FILE)')
    .option('--group <name>', 'publish to this router group only')
    .option('--force', 'publish even if the guard rail refuses the change against the version in force (moved share, an emptied cell)')
    .option(
      '--max-move <percent>',
      'largest share of the keyspace one publish may move from the version in force',
      String(DEFAULT_MAX_MOVED_SHARE * 100),
    )
    .option('--routing-only', 're-route keys without moving their data (stateless workloads only)')
    .action((argument: string | undefined, flags: StoreFlags & { mapping?: string; force?: boolean; maxMove: string; routingOnly?: boolean }) =>
      storeAction(async ({ publishMapping }) => {
        const doc = readMappingFile(mappingFileOf('publish', argument, flags.mapping));
        const maxMovedShare = maxMoveShare(flags.maxMove);
        const { stores, fleet, bakeSeconds } = await openStores(flags);
        const result = await publishMapping(stores, doc, {
          groups: fleet.router.groups.map((g) => g.name),
          onlyGroup: flags.group,
          bakeSeconds,
          routerSlots: fleet.router.slots,
          bucketCount: fleet.bucketCount,
          // The change commands' guard, against the version in force: a hand-edited document too.
          guard: (inForce, next) => [
            ...placementRefusals(fleet, inForce, next),
            ...publishRefusals(inForce, next, { maxMovedShare, routingOnly: flags.routingOnly, force: flags.force }),
          ],
          progress: (line) => io.err(`${line}\n`),
        });
        io.out(flags.json ? json(result) : publishText(result));
      }),
    );

  storeCommand(mapping, 'rollback', 'put the previous version back on every router group (published as a new version)').action((flags: StoreFlags) =>
    storeAction(async ({ rollbackMapping }) => {
      const { stores, fleet, bakeSeconds } = await openStores(flags);
      const result = await rollbackMapping(stores, {
        groups: fleet.router.groups.map((g) => g.name),
        bakeSeconds,
        routerSlots: fleet.router.slots,
        bucketCount: fleet.bucketCount,
        now: new Date().toISOString(),
        progress: (line) => io.err(`${line}\n`),
      });
      io.out(flags.json ? json(result) : `restored the content of v${result.restoredFrom} as v${result.version}\n${publishText(result)}`);
    }),
  );

  storeCommand(mapping, 'pull', "write the document in force (the first router group's, or --group's) to --out: the base of the next change")
    .requiredOption('--out <file>', 'where to write the document')
    .option('--group <name>', 'the router group whose document to write (default: the first, the canary group)')
    .action((flags: StoreFlags & { out: string }) =>
      storeAction(async () => {
        const { stores, fleet } = await openStores(flags);
        const group = flags.group ?? fleet.router.groups[0].name;
        if (!fleet.router.groups.some((g) => g.name === group))
          throw new CliError(`no router group \`${group}\`; groups are ${fleet.router.groups.map((g) => g.name).join(', ')}`, EXIT.usage);
        const stored = await stores[0].readGroup(group);
        if (!stored)
          throw new CliError(`group \`${group}\` in s3://${stores[0].bucket} has no mapping yet; make the first one with \`cellctl mapping init\``);
        writeFileAtomic(flags.out, stored.text);
        io.out(
          flags.json
            ? json({ file: flags.out, version: stored.document.version, group })
            : `wrote ${flags.out} (v${stored.document.version}, in force in group ${group})\n`,
        );
      }),
    );

  storeCommand(
    mapping,
    'repair',
    'point every router group whose pointer is not a valid mapping back at a valid published version (--to, default the newest); the routers keep their last-known-good meanwhile',
  )
    .option('--to <version>', 'the published version to point the invalid pointers at (default: the newest valid one)')
    .action((flags: StoreFlags & { to?: string }) =>
      storeAction(async ({ repairPointers }) => {
        const version = flags.to === undefined ? undefined : Number(flags.to);
        if (version !== undefined && (!Number.isInteger(version) || version < 1))
          throw new CliError(`--to ${flags.to}: give a published version number (cellctl mapping history)`, EXIT.usage);
        const { stores, fleet } = await openStores(flags);
        const groups = flags.group ? [flags.group] : fleet.router.groups.map((g) => g.name);
        const results = await repairPointers(stores, groups, { version, progress: (line) => io.err(`${line}\n`) });
        io.out(
          flags.json
            ? json(results)
            : formatTable(
                ['bucket', 'group', 'pointer', 'version'],
                results.map((r) => [r.bucket, r.group, r.status, r.version === undefined ? '-' : `v${r.version}`]),
              ),
        );
      }),
    )
    .option('--group <name>', 'repair this router group only');

  storeCommand(mapping, 'history', 'published versions, newest first, and which router group is on which')
    .addOption(new Option('--limit <n>', 'versions to show').default('20'))
    .action((flags: StoreFlags & { limit: string }) =>
      storeAction(async ({ mappingHistory }) => {
        const { stores, fleet } = await openStores(flags);
        const entries = await mappingHistory(
          stores[0],
          fleet.router.groups.map((g) => g.name),
          Number(flags.limit),
        );
        io.out(
          flags.json
            ? json(entries)
            : formatTable(
                ['version', 'created', 'groups'],
                entries.map((e) => [`v${e.version}`, e.createdAt ?? '?', e.groups.join(',') || '-']),
              ),
        );
      }),
    );

  return mapping;
}

/** One region's cells in a mapping: the buckets each holds against what its shape was tested at. */
export interface RegionShare {
  readonly region: string;
  readonly buckets: number;
  readonly share: number;
  readonly cells: readonly {
    readonly cell: string;
    readonly shape: string;
    /** Its tier (`-` for a cell the fleet file does not name). */
    readonly tier: string;
    /** The one tenant a dedicated cell serves. */
    readonly dedicatedTo?: string;
    readonly state: string;
    readonly buckets: number;
    /** Of the region's buckets. */
    readonly shareOfRegion: number;
    /** The shape's tested requestsPerSecond over that of the region's cells taking buckets (its share by capacity). */
    readonly capacityShare: number;
  }[];
}

/** The mapping's cells grouped by the fleet file's regions (cells it does not name: region `unknown`). */
export function mappingByRegion(doc: MappingDocument, fleet: Fleet): RegionShare[] {
  const counts = bucketCounts(doc);
  const byId = new Map(fleet.cells.map((c) => [c.id, c]));
  const regionOf = (id: string) => byId.get(id)?.region ?? 'unknown';
  const regions = [...new Set(Object.keys(doc.cells).map(regionOf))].sort();
  return regions.map((region) => {
    const ids = Object.keys(doc.cells).filter((id) => regionOf(id) === region);
    const buckets = ids.reduce((n, id) => n + (counts.get(id) ?? 0), 0);
    // The cells that take buckets: active, of the default tier, not dedicated, not the canary (it takes its prefix only).
    const tested = (id: string) => {
      const cell = byId.get(id);
      return doc.cells[id].state === 'active' && cell && holdsBuckets(fleet, cell) ? cell.shape.limits.requestsPerSecond : 0;
    };
    const capacity = ids.reduce((n, id) => n + tested(id), 0);
    return {
      region,
      buckets,
      share: buckets / totalBuckets(doc),
      cells: ids.map((id) => ({
        cell: id,
        shape: byId.get(id)?.shapeName ?? '-',
        tier: byId.get(id)?.tier ?? '-',
        ...(byId.get(id)?.dedicatedTo !== undefined ? { dedicatedTo: byId.get(id)!.dedicatedTo } : {}),
        state: doc.cells[id].state,
        buckets: counts.get(id) ?? 0,
        shareOfRegion: buckets ? (counts.get(id) ?? 0) / buckets : 0,
        capacityShare: capacity ? tested(id) / capacity : 0,
      })),
    };
  });
}

function byRegionText(doc: MappingDocument, regions: readonly RegionShare[]): string {
  return `version ${doc.version}, ${bucketsText(doc)}, by region of the fleet file\n${regionTables(regions)}`;
}

/** `16384 buckets`, or with home tables `16384 buckets in each of 2 home tables (us-east-1, eu-west-1)`. */
function bucketsText(doc: MappingDocument): string {
  return doc.homes === undefined
    ? `${doc.bucketCount} buckets`
    : `${doc.bucketCount} buckets in each of ${tableCount(doc)} home tables (${doc.homes.tables.map((t) => t.regions.join('+')).join(', ')})`;
}

/** Per region: its buckets, then each cell's shape, tier, state, buckets and shares (`show --by-region`, `plan`). */
export function regionTables(regions: readonly RegionShare[]): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const out: string[] = [];
  for (const r of regions) {
    out.push(
      '',
      `${r.region}: ${r.buckets} buckets (${pct(r.share)})`,
      formatTable(
        ['cell', 'shape', 'tier', 'state', 'buckets', 'of region', 'by capacity'],
        r.cells.map((c) => [
          c.cell,
          c.shape,
          c.dedicatedTo !== undefined ? `dedicated to ${c.dedicatedTo}` : c.tier,
          c.state,
          c.buckets,
          pct(c.shareOfRegion),
          pct(c.capacityShare),
        ]),
      ).trimEnd(),
    );
  }
  return `${out.join('\n')}\n`;
}

/** `mapping diff --by-region`: the moves within each region, then those across (whose data leaves its region). */
function regionMovesText(moves: readonly RegionMove[]): string {
  if (moves.length === 0) return 'by region: nothing moves\n';
  const rows = moves.map((m) => [m.from === m.to ? `within ${m.from}` : `${m.from} -> ${m.to}`, m.buckets, m.overrides]);
  const across = moves.filter((m) => m.from !== m.to && m.from !== 'by bucket' && m.to !== 'by bucket');
  const warning = across.length
    ? `${across.reduce((n, m) => n + m.buckets, 0)} bucket(s) and ${across.reduce((n, m) => n + m.overrides, 0)} override(s) move tenants to another region: their data leaves its region\n`
    : '';
  return `by region of the fleet file:\n${formatTable(['moves', 'buckets', 'overrides'], rows)}${warning}`;
}

/** Each cell's weight in the fleet file: its shape's tested requestsPerSecond. */
function shapeWeights(fleet: Fleet): Map<string, number> {
  return new Map(fleet.cells.map((c) => [c.id, c.shape.limits.requestsPerSecond]));
}
