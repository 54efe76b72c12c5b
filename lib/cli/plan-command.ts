import { Command } from 'commander';
import { lastSynthesizedWaves, planWaves, waveChanges, WavePlanError } from '../domain/waves';
import { seedMapping } from '../domain/fleet';
import { fleetFrom } from './context';
import { CliError, CliIo, formatTable, json } from './io';
import { mappingByRegion, readMappingFile, regionTables } from './mapping-commands';

/** `1h 30m` from seconds. */
export function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [h ? `${h}h` : '', m ? `${m}m` : '', s || (!h && !m) ? `${s}s` : ''].filter(Boolean).join(' ');
}

/** `cellctl plan`: the waves a change goes through, from the fleet config. */
export function planCommand(io: CliIo): Command {
  return new Command('plan')
    .description('the rollout waves: cells, regions, bake, share of cells exposed after each wave, minimum rollout time')
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--against <dir>', 'report the cells this plan moves to another wave than the pipeline last synthesized there', 'cdk.out')
    .option('--mapping <file>', "the cells' shares of their region's buckets in this document (default: the fleet's first mapping)")
    .option('--json', 'print the plan as JSON')
    .action((flags: { config: string; against: string; mapping?: string; json?: boolean }) => {
      const fleet = fleetFrom(flags.config);
      let plan;
      try {
        plan = planWaves(fleet);
      } catch (error) {
        if (error instanceof WavePlanError) throw new CliError(error.message);
        throw error;
      }
      // Before anything is synthesized: a cell deployed in one wave and now planned in another.
      const before = lastSynthesizedWaves(flags.against, fleet.app);
      const moved = before ? waveChanges(before, plan) : undefined;
      // Per region: the cells, their shapes and tiers, and their share of the region's buckets.
      const regions = mappingByRegion(flags.mapping ? readMappingFile(flags.mapping) : seedMapping(fleet), fleet);
      if (flags.json) {
        io.out(json({ ...plan, regions, ...(moved ? { against: flags.against, waveChanges: moved } : {}) }));
        return;
      }
      io.out(
        formatTable(
          ['wave', 'kind', 'cells', 'regions', 'bake', 'exposed'],
          plan.waves.map((w) => [
            w.name,
            w.kind,
            w.cells.join(','),
            w.regions.join(','),
            duration(w.bakeSeconds),
            `${w.cumulativeCells}/${fleet.cells.length} (${(w.cumulativeShare * 100).toFixed(1)}%)`,
          ]),
        ),
      );
      io.out('\nthen the routers, region by region (canary group first in each):\n');
      io.out(
        formatTable(
          ['wave', 'region', 'bake'],
          plan.routerWaves.map((w) => [w.name, w.region, duration(w.bakeSeconds)]),
        ),
      );
      io.out(
        `\nminimum end-to-end rollout: ${duration(plan.minimumRolloutSeconds)} of bake across ${plan.waves.length} cell waves and ${plan.routerWaves.length} router waves, plus deployment time\n`,
      );
      io.out(`\nthe cells by region, with their share of its buckets in ${flags.mapping ?? "the fleet's first mapping"}:\n${regionTables(regions)}`);
      if (moved && moved.length > 0) {
        io.out(
          `\n${moved.length} cell(s) change wave against the pipeline last synthesized in ${flags.against}: ${moved.map((m) => `${m.cell} ${m.from} -> ${m.to}`).join(', ')}; ` +
            'the next rollout deploys them in their new place (declare `wave` on the cells to keep the order)\n',
        );
      }
    });
}
