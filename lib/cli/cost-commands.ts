import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import {
  CostAssumptions,
  CostInput,
  DEFAULT_ASSUMPTIONS,
  estimateFleetCost,
  FleetCost,
  readAssembly,
  renderFleetCost,
  renderFleetCostHtml,
} from '../domain/cost';
import { progressOn, Progress } from '../domain/files';
import { Fleet } from '../domain/fleet';
import { fleetFrom } from './context';
import { CliError, CliIo, EXIT, json, writeFileAtomic } from './io';

interface CostFlags {
  readonly config: string;
  readonly assembly: string;
  readonly utilization: string;
  readonly kibPerRequest: string;
  readonly json?: boolean;
  readonly html?: string;
  readonly detail?: boolean;
}

/** What the estimate needs of the fleet file: its cells, shapes' tested rates, router zones, quota. */
export function costInputOf(fleet: Fleet, assumptions: CostAssumptions = DEFAULT_ASSUMPTIONS): CostInput {
  return {
    app: fleet.app,
    cells: fleet.cells.map((c) => ({
      id: c.id,
      region: c.region,
      shape: c.shapeName,
      requestsPerSecond: c.shape.limits.requestsPerSecond,
      ...(c.failoverRegion ? { failoverRegion: c.failoverRegion } : {}),
    })),
    routerZones: Object.fromEntries(Object.entries(fleet.regions).map(([region, r]) => [region, r.availabilityZones.length])),
    interfaceEndpointsPerVpc: fleet.quotas.interfaceEndpointsPerVpc,
    reach: fleet.router.reach,
    zoneAffinity: fleet.router.zoneAffinity,
    assumptions,
  };
}

/**
 * The fleet's cost from the assembly `cdk synth` wrote. A missing assembly is an error that says to
 * synthesize; one older than the fleet file is used with a warning (it may not be what a deploy creates now).
 */
export function fleetCostOf(
  fleet: Fleet,
  configPath: string,
  assemblyDir: string,
  assumptions: CostAssumptions,
  warn: (s: string) => void,
  progress?: Progress,
): FleetCost {
  const manifest = path.join(assemblyDir, 'manifest.json');
  if (!fs.existsSync(manifest)) {
    throw new CliError(
      `${assemblyDir} holds no synthesized assembly: run \`npx cdk synth\` first (no credentials needed), or name one with --assembly DIR`,
    );
  }
  if (fs.existsSync(configPath) && fs.statSync(configPath).mtimeMs > fs.statSync(manifest).mtimeMs) {
    warn(
      `warning: ${assemblyDir} is older than ${configPath}: the figures are of the last synth; run \`npx cdk synth\` for the fleet file as it is\n`,
    );
  }
  progress?.step(`reading the templates in ${assemblyDir}`);
  const stacks = readAssembly(assemblyDir);
  progress?.step(`pricing ${stacks.length} stacks`);
  try {
    const cost = estimateFleetCost(stacks, costInputOf(fleet, assumptions));
    // Stacks of another fleet file price as other stacks: none is one of this fleet's cells.
    if (!cost.owners.some((o) => o.kind === 'cell')) {
      throw new Error(`${assemblyDir} holds no cell stack of app ${fleet.app}: it was synthesized from another fleet file; run \`npx cdk synth\``);
    }
    return cost;
  } catch (error) {
    throw new CliError((error as Error).message);
  } finally {
    progress?.finish();
  }
}

function shareFlag(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 1)
    throw new CliError(`${flag} ${value}: give a share above 0 and at most 1 (0.25 is a quarter of the tested rate)`, EXIT.usage);
  return n;
}

function kibFlag(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 1024 * 1024)
    throw new CliError(`--kib-per-request ${value}: give the KiB of a request and its response, above 0`, EXIT.usage);
  return n;
}

/** `cellctl cost [--assembly cdk.out] [--json] [--html FILE] [--detail]`. */
export function costCommand(io: CliIo): Command {
  return new Command('cost')
    .description(
      "what the fleet costs a month, from the templates `cdk synth` wrote and the repository's price table: per cell and shape, per router region, the tooling account, the whole fleet; each line with its price's source and date; the levers",
    )
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--assembly <dir>', 'the synthesized assembly (`npx cdk synth` writes cdk.out)', 'cdk.out')
    .option(
      '--utilization <share>',
      "usage estimates: each cell's average load as a share of its shape's tested requestsPerSecond",
      String(DEFAULT_ASSUMPTIONS.utilization),
    )
    .option('--kib-per-request <n>', 'usage estimates: KiB of a request and its response together', String(DEFAULT_ASSUMPTIONS.kibPerRequest))
    .option('--detail', "every cell's lines, not one cell's per shape")
    .option('--json', 'print the estimate as JSON')
    .option('--html <file>', 'also write one self-contained page: a bar per component, each owner line by line')
    .action((flags: CostFlags) => {
      const assumptions = { utilization: shareFlag(flags.utilization, '--utilization'), kibPerRequest: kibFlag(flags.kibPerRequest) };
      const fleet = fleetFrom(flags.config);
      // Steps on a terminal (a 400-cell assembly takes a while to read), none with --json.
      const progress = progressOn(io.errStream ?? { write: () => undefined }, { quiet: flags.json });
      const cost = fleetCostOf(fleet, flags.config, flags.assembly, assumptions, io.err, progress);
      if (flags.html) writeFileAtomic(flags.html, renderFleetCostHtml(cost, `What ${fleet.app} costs a month`));
      io.out(flags.json ? json(cost) : renderFleetCost(cost, { detail: flags.detail }));
    });
}

/**
 * Each shape's fixed cost a cell with its router endpoints (what adding one costs before traffic), for capacity's proposals: from the written assembly when there is
 * one that prices; otherwise undefined (the proposal then points to `cellctl cost`).
 */
export function shapeCostsOf(fleet: Fleet, assemblyDir = 'cdk.out'): Map<string, number> | undefined {
  try {
    if (!fs.existsSync(path.join(assemblyDir, 'manifest.json'))) return undefined;
    const cost = estimateFleetCost(readAssembly(assemblyDir), costInputOf(fleet));
    return new Map(cost.shapes.map((s) => [s.shape, s.fixedUsdPerCell + s.routerLinksUsdPerCell]));
  } catch {
    return undefined;
  }
}
