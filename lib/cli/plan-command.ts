import { Command } from 'commander';
import { planWaves, WavePlanError } from '../domain/waves';
import { fleetFrom } from './context';
import { CliError, CliIo, formatTable, json } from './io';

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
    .option('--json', 'print the plan as JSON')
    .action((flags: { config: string; json?: boolean }) => {
      const fleet = fleetFrom(flags.config);
      let plan;
      try {
        plan = planWaves(fleet);
      } catch (error) {
        if (error instanceof WavePlanError) throw new CliError(error.message);
        throw error;
      }
      if (flags.json) {
        io.out(json(plan));
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
    });
}
