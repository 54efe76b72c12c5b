/**
 * npm run bench:audit -- [--cells N]: what each audit pack costs on top of synthesizing the fleet
 * (the example fleet, or a generated fleet of N cells). Synthesizes once, then times each pack over
 * every stack: AwsSolutions and CellIsolation (the synth gates), Control Tower (cfn-guard over each
 * template) and NIST 800-53 rev 5.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { AwsSolutionsChecks, NIST80053R5Checks } from 'cdk-nag';
import { addFleet, addPipeline, cdkJsonContext, isolationChecksPropsOf } from '../lib/app';
import { allStacks, ControlTowerChecks, controlTowerFindings, nagFindings } from '../lib/app/audit';
import { generateScaleFleet, loadFleet, resolveFleet } from '../lib/domain/fleet';
import { CellIsolationChecks } from '../lib/constructs/isolation';

function seconds<T>(f: () => T): [T, number] {
  const start = process.hrtime.bigint();
  const value = f();
  return [value, Number(process.hrtime.bigint() - start) / 1e9];
}

const at = process.argv.indexOf('--cells');
const configPath = path.resolve('cells.config.ts');
const fleet =
  at < 0
    ? loadFleet(configPath)
    : resolveFleet(
        generateScaleFleet(
          // eslint-disable-next-line @typescript-eslint/no-require-imports -- the fleet file is loaded by its path, at run time
          (require(configPath) as { default: Parameters<typeof generateScaleFleet>[0] }).default,
          Number(process.argv[at + 1]),
          2,
        ),
      );
const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-audit-'));
try {
  const app = new App({ outdir, context: cdkJsonContext() });
  const [, build] = seconds(() => (fleet.pipeline ? addPipeline(app, fleet, { audit: false }) : addFleet(app, fleet, { audit: false })));
  const [, synth] = seconds(() => app.synth());
  const stacks = allStacks(app).length;
  const rows: [string, number, number][] = [];
  for (const [name, run] of [
    ['AwsSolutions', () => nagFindings(new AwsSolutionsChecks(), app)],
    ['CellIsolation', () => nagFindings(new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet)), app)],
    ['ControlTower', () => controlTowerFindings(app, new ControlTowerChecks())],
    ['NIST.800.53.R5', () => nagFindings(new NIST80053R5Checks(), app)],
  ] as const) {
    const [findings, s] = seconds(run);
    rows.push([name, s, findings.length]);
  }
  process.stdout.write(
    `fleet: ${fleet.cells.length} cells, ${stacks} stacks; construct ${build.toFixed(1)} s, synth without packs ${synth.toFixed(1)} s\n`,
  );
  process.stdout.write('| pack | seconds | per stack (s) | findings |\n|---|---|---|---|\n');
  for (const [name, s, n] of rows) process.stdout.write(`| ${name} | ${s.toFixed(1)} | ${(s / stacks).toFixed(2)} | ${n} |\n`);
  process.stdout.write(`machine: ${os.cpus().length} cores, node ${process.version}\n`);
} finally {
  fs.rmSync(outdir, { recursive: true, force: true });
}
