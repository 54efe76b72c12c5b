import * as path from 'path';
import { Command } from 'commander';
import { Fleet, laneSettingsOf, loadFleetInput } from '../domain/fleet';
import {
  extendShards,
  initLanes,
  laneFlagName,
  LaneSettings,
  laneSettingsProblems,
  LANES_FILE_NAME,
  parseShard,
  planShards,
  readLanesFile,
  Shard,
  shardId,
  ShardPlan,
  tenantShard,
  writeLanesFile,
} from '../domain/lanes';
import { keyProblem } from '../domain/mapping';
import { routerParameters, shardRecordName } from '../domain/names';
import { fleetFrom, mappingBucketOf, s3Client, withConfig } from './context';
import { CliError, CliIo, formatTable, integerFlag, json } from './io';

/** `--lanes N --per-tenant K [--max-overlap M]` (`lanes plan`, `fleet local`), checked: one usage error naming each flag. */
export function laneFlags(flags: { lanes: string; perTenant: string; maxOverlap?: string }): LaneSettings {
  const count = integerFlag(flags.lanes, '--lanes', 2, 32);
  const perTenant = integerFlag(flags.perTenant, '--per-tenant', 1, 32);
  const maxOverlap = flags.maxOverlap === undefined ? perTenant - 1 : integerFlag(flags.maxOverlap, '--max-overlap', 0, 32);
  const settings = { count, perTenant, maxOverlap };
  const problems = laneSettingsProblems(settings, laneFlagName);
  if (problems.length > 0) throw new CliError(problems.join('\n'), 2);
  return settings;
}

/** The fleet file's `router.lanes`, checked, and where its `cells.lanes.json` is (shown relative when inside the working directory). */
function configuredLanes(configPath: string): { settings: LaneSettings; file: string; shown: string } {
  const { input } = withConfig(() => loadFleetInput(path.resolve(configPath)));
  const lanes = input.router?.lanes;
  if (!lanes)
    throw new CliError(
      `${configPath}: router.lanes is not set; add router.lanes: { count: 8, perTenant: 2 } (docs/lanes.md), or give \`lanes plan\` --lanes N --per-tenant K`,
    );
  const settings = laneSettingsOf(lanes);
  const problems = laneSettingsProblems(settings);
  if (problems.length > 0) throw new CliError(`${configPath}:\n  - ${problems.join('\n  - ')}`);
  const file = path.join(path.dirname(path.resolve(configPath)), LANES_FILE_NAME);
  return { settings, file, shown: path.relative(process.cwd(), file) || file };
}

const percent = (share: number) => `${(share * 100).toFixed(share > 0 && share < 0.01 ? 3 : 2)}%`;
/** 1/28 rather than 3.57%: the figure the shard count explains. */
const fraction = (share: number, shards: number) => (share === 0 ? '0' : `${Math.round(share * shards)}/${shards} (${percent(share)})`);

function printPlan(io: CliIo, plan: ShardPlan, source: string): void {
  const { settings, shards } = plan;
  io.out(`${settings.count} lanes, ${settings.perTenant} per tenant, overlap at most ${settings.maxOverlap} (${source})\n`);
  io.out(`shards                 ${shards.length}\n`);
  io.out(`largest overlap        ${plan.largestOverlap}\n`);
  io.out(
    `shards per lane        ${plan.shardsPerLane.min === plan.shardsPerLane.max ? plan.shardsPerLane.min : `${plan.shardsPerLane.min}-${plan.shardsPerLane.max}`}\n`,
  );
  io.out(
    `one lane fails         ${fraction(plan.oneLaneFullyAffected, shards.length)} of tenants fully affected; ${percent(plan.oneLanePartlyAffected)} retry on another lane\n`,
  );
  io.out(
    `one shard fails        ${fraction(plan.oneShardFullyAffected, shards.length)} of tenants fully affected (all its lanes down: a poison tenant's)\n\n`,
  );
  const perRow = 10;
  const rows: string[][] = [];
  for (let i = 0; i < shards.length; i += perRow) rows.push(shards.slice(i, i + perRow).map(shardId));
  io.out(`${rows.map((r) => r.join('  ')).join('\n')}\n`);
}

function planJson({ settings, shards, ...figures }: ShardPlan, source: string) {
  return { ...settings, source, shardCount: shards.length, ...figures, shards };
}

/** The fleet's lane settings and stored shards (cells.lanes.json), or why there are none. */
function storedLanes(configPath: string): { settings: LaneSettings; shards: readonly Shard[] } {
  const { settings, file, shown } = configuredLanes(configPath);
  let stored;
  try {
    stored = readLanesFile(file, shown);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
  if (!stored) throw new CliError(`${LANES_FILE_NAME} is missing beside ${configPath}: run \`cellctl lanes init\``);
  return { settings, shards: stored.shards };
}

/**
 * Each lane's NLB DNS name in `region`, from the SSM parameters its lane stack writes; a lane not
 * deployed yet is missing from the answer.
 */
async function laneDnsNames(app: string, region: string, lanes: readonly number[]): Promise<Record<number, string>> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetParametersCommand, SSMClient } = require('@aws-sdk/client-ssm') as typeof import('@aws-sdk/client-ssm');
  const ssm = new SSMClient({ region });
  try {
    const { Parameters } = await ssm.send(new GetParametersCommand({ Names: lanes.map((lane) => routerParameters.laneDnsName(app, lane)) }));
    const byName = new Map((Parameters ?? []).map((p) => [p.Name, p.Value]));
    return Object.fromEntries(
      lanes.flatMap((lane) =>
        byName.get(routerParameters.laneDnsName(app, lane)) ? [[lane, byName.get(routerParameters.laneDnsName(app, lane))!]] : [],
      ),
    );
  } catch (error) {
    throw new CliError(
      `cannot read the lane NLB names in ${region} (SSM ${routerParameters.laneDnsName(app, lanes[0])} …): ${(error as Error).name}: ${(error as Error).message}; check the credentials (the router account) and that the lane stacks are deployed`,
    );
  } finally {
    ssm.destroy();
  }
}

/** The home region's mapping bucket, where the lane assignments are: `--bucket`, else its SSM parameter. */
async function assignmentsStore(fleet: Fleet, flags: { bucket?: string; forcePathStyle?: boolean }) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { MappingStore } = require('../adapters/mapping-store') as typeof import('../adapters/mapping-store');
  const home = fleet.router.homeRegion;
  const bucket = flags.bucket ?? (await mappingBucketOf(fleet, home));
  return new MappingStore(s3Client({ forcePathStyle: flags.forcePathStyle }, home), bucket);
}

/** `cellctl lanes …`: shuffle-sharded router lanes (docs/lanes.md). */
export function lanesCommand(io: CliIo): Command {
  const lanes = new Command('lanes').description("shuffle-sharded router lanes: the shard set, a tenant's shard, assignments (docs/lanes.md)");

  lanes
    .command('init')
    .description(
      `generate the fleet's default shards into ${LANES_FILE_NAME} (beside the config), or add shards for lanes added since; existing shards are kept`,
    )
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .action((flags: { config: string }) => {
      const { settings, file, shown } = configuredLanes(flags.config);
      let result;
      try {
        result = initLanes(settings, readLanesFile(file, shown), shown);
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      if (result.action !== 'unchanged') writeLanesFile(file, result.file);
      const plan = planShards(settings, result.file.shards);
      io.out(
        result.action === 'created'
          ? `wrote ${shown}: ${result.file.shards.length} shards; commit it (a tenant's default shard is a function of this set)\n`
          : result.action === 'extended'
            ? `extended ${shown}: ${result.added.length} shards added for the new lanes, ${result.file.shards.length - result.added.length} kept; about ${percent(result.added.length / result.file.shards.length)} of tenants get a new default shard\n`
            : `${shown} already fits router.lanes: ${result.file.shards.length} shards\n`,
      );
      io.out(`one shard fails: ${fraction(plan.oneShardFullyAffected, plan.shards.length)} of tenants fully affected\n`);
    });

  lanes
    .command('plan')
    .description('print the shards, their largest overlap and the share of tenants a failed lane or shard affects')
    .option('--lanes <n>', 'lanes per region (default: the fleet stored shards, cells.lanes.json)')
    .option('--per-tenant <k>', "lanes in each tenant's shard", '2')
    .option('--max-overlap <m>', 'lanes two shards may share (default: per-tenant - 1)')
    .option('--config <file>', 'fleet config (without --lanes)', 'cells.config.ts')
    .option('--json', 'print the plan as JSON')
    .action((flags: { lanes?: string; perTenant: string; maxOverlap?: string; config: string; json?: boolean }) => {
      let settings: LaneSettings;
      let shards: readonly Shard[];
      let source: string;
      if (flags.lanes !== undefined) {
        settings = laneFlags({ ...flags, lanes: flags.lanes });
        shards = extendShards(settings);
        source = 'generated';
      } else {
        ({ settings, shards } = storedLanes(flags.config));
        source = LANES_FILE_NAME;
      }
      const plan = planShards(settings, shards);
      if (flags.json) io.out(json(planJson(plan, source)));
      else printPlan(io, plan, source);
    });

  lanes
    .command('where')
    .argument('<tenant>', 'partition key')
    .description("print the tenant's shard and how to reach its lanes (the shard's DNS name per region, or the lanes' addresses)")
    .option('--local', 'the running local fleet (`cellctl fleet local --lanes N`)')
    .option('--state-dir <dir>', 'with --local: the fleet state directory', '.cells-local')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--bucket <name>', "the home region's mapping bucket, where the assignments are (default: its SSM parameter)")
    .option('--force-path-style', 'path-style S3 addressing, for S3-compatible servers')
    .option('--json', 'print {"tenant","shard","lanes","source",…} as JSON')
    .action(
      async (
        tenant: string,
        flags: { local?: boolean; stateDir: string; config: string; bucket?: string; forcePathStyle?: boolean; json?: boolean },
      ) => {
        const problem = keyProblem(tenant);
        if (problem) throw new CliError(`tenant \`${tenant}\`: ${problem}`, 2);
        if (flags.local) {
          // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
          const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
          const file = readFleetFile(flags.stateDir);
          if (!file) throw new CliError(`no local fleet in ${flags.stateDir}: start one with \`cellctl fleet local --lanes 8 --per-tenant 2\``);
          if (!file.lanes) throw new CliError(`the local fleet in ${flags.stateDir} runs one router, no lanes: restart it with --lanes N`);
          const shard = tenantShard(tenant, file.lanes.shards);
          const urls = shard.lanes.map((lane) => ({ lane, url: file.lanes!.routers.find((r) => r.lane === lane)!.url }));
          if (flags.json) io.out(json({ tenant, shard: shardId(shard.lanes), lanes: urls, source: shard.source }));
          else {
            io.out(`tenant ${tenant}: shard ${shardId(shard.lanes)} (${shard.source})\n`);
            io.out(
              formatTable(
                ['lane', 'router'],
                urls.map((u) => [u.lane, u.url]),
              ),
            );
          }
          return;
        }
        const fleet = fleetFrom(flags.config);
        if (!fleet.router.lanes) throw new CliError(`${flags.config}: router.lanes is not set; the fleet has one router entry per region`);
        const { settings, shards } = { settings: fleet.router.lanes, shards: fleet.router.lanes.shards };
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
        const { readAssignments } = require('../operations/lanes') as typeof import('../operations/lanes');
        const store = await assignmentsStore(fleet, flags);
        const { document } = await readAssignments(store, settings, shards).catch((error: Error) => {
          throw new CliError(error.message);
        });
        const shard = tenantShard(tenant, shards, document);
        const zone = fleet.router.lanes.hostedZone;
        const regions = await Promise.all(
          Object.keys(fleet.regions).map(async (region) => {
            const names = await laneDnsNames(fleet.app, region, shard.lanes);
            return {
              region,
              ...(zone ? { name: shardRecordName(shard.lanes, region, zone.name) } : {}),
              lanes: shard.lanes.map((lane) => ({
                lane,
                ...(names[lane] ? { dnsName: names[lane] } : {}),
                parameter: routerParameters.laneDnsName(fleet.app, lane),
              })),
            };
          }),
        );
        if (flags.json) io.out(json({ tenant, shard: shardId(shard.lanes), lanes: shard.lanes, source: shard.source, regions }));
        else {
          io.out(`tenant ${tenant}: shard ${shardId(shard.lanes)} (${shard.source})\n`);
          io.out(
            formatTable(
              ['region', 'shard name', 'lane NLBs'],
              regions.map((r) => [
                r.region,
                r.name ?? '- (no router.lanes.hostedZone)',
                r.lanes.map((l) => `${l.lane}: ${l.dnsName ?? `not deployed (${l.parameter})`}`).join(', '),
              ]),
            ),
          );
        }
      },
    );

  lanes
    .command('assign')
    .argument('<tenant>', 'partition key')
    .description(
      'put a tenant on another shard (or back on its default one): checked against every shard in use and written with If-Match, so concurrent assignments cannot break the overlap bound',
    )
    .option('--shard <lanes>', 'the shard, as its lanes (for example 1-4)')
    .option('--default', "back to the tenant's default shard")
    .option('--dedicated', 'the shard is this tenant alone: no default shard and no other assignment is it')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--bucket <name>', "the home region's mapping bucket (default: its SSM parameter)")
    .option('--force-path-style', 'path-style S3 addressing, for S3-compatible servers')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        tenant: string,
        flags: { shard?: string; default?: boolean; dedicated?: boolean; config: string; bucket?: string; forcePathStyle?: boolean; json?: boolean },
      ) => {
        if ((flags.shard === undefined) === !flags.default) throw new CliError('give exactly one of --shard LANES or --default', 2);
        if (flags.default && flags.dedicated) throw new CliError('--dedicated goes with --shard', 2);
        let lanesWanted: Shard | undefined;
        try {
          lanesWanted = flags.shard === undefined ? undefined : parseShard(flags.shard);
        } catch (error) {
          throw new CliError(`--shard ${(error as Error).message}`, 2);
        }
        const fleet = fleetFrom(flags.config);
        if (!fleet.router.lanes) throw new CliError(`${flags.config}: router.lanes is not set; there are no shards to assign`);
        const lanesConfig = fleet.router.lanes;
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
        const { assignTenant } = require('../operations/lanes') as typeof import('../operations/lanes');
        const store = await assignmentsStore(fleet, flags);
        let result;
        try {
          result = await assignTenant(store, lanesConfig, lanesConfig.shards, tenant, lanesWanted, { dedicated: flags.dedicated });
        } catch (error) {
          if (error instanceof Error) throw new CliError(error.message);
          throw error;
        }
        const { shard } = result;
        if (flags.json) io.out(json({ tenant, shard: shardId(shard.lanes), lanes: shard.lanes, source: shard.source, conflicts: result.conflicts }));
        else
          io.out(
            `tenant ${tenant}: shard ${shardId(shard.lanes)} (${shard.source})${result.conflicts ? `, after ${result.conflicts} concurrent change(s)` : ''}; its clients move when they next look the shard up (docs/lanes.md, "Moving a tenant")\n`,
          );
      },
    );
  return lanes;
}
