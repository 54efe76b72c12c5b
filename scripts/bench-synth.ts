/**
 * npm run bench:synth -- [--cells N [--regions R]] [--table]
 *   --cells N  stamp a generated fleet of N cells (example fleet's shapes and policies, the settings a
 *              fleet of that size needs: generateScaleFleet) over R regions (default the example's
 *              two) and synth it with every check on (the audit packs, the AWS limits of every
 *              template); without it, synth the shipped example fleet.
 *   --table    run the example fleet, 50 and 200 cells, each in a fresh process, and print a
 *              Markdown table for docs/performance.md.
 * Prints wall time, per-cell time and peak resident memory of the synth process.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { addFleet, addPipeline, cliSynthContext } from '../lib/app';
import { generateFleet, generateScaleFleet, loadFleet, resolveFleet } from '../lib/domain/fleet';
import { pipelineStackName } from '../lib/domain/names';

interface Result {
  readonly fleet: string;
  readonly cells: number;
  readonly seconds: number;
  readonly msPerCell: number;
  readonly peakMiB: number;
  readonly templateKiB: number;
  readonly pipelineTemplateKiB?: number;
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function runOnce(count: number | undefined, regions: number | undefined): Result {
  const configPath = path.resolve('cells.config.ts');
  const fleet =
    count === undefined
      ? loadFleet(configPath)
      : (() => {
          // eslint-disable-next-line @typescript-eslint/no-require-imports -- the fleet file is loaded by its path, at run time
          const input = (require(configPath) as { default: Parameters<typeof generateFleet>[0] }).default;
          return resolveFleet(generateScaleFleet(input, count, regions ?? Object.keys(input.regions).length));
        })();
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-synth-'));
  const started = process.hrtime.bigint();
  const app = new App({ outdir, context: cliSynthContext() });
  // The same choice as bin/app.ts: behind the pipeline when the fleet has one.
  // Every check on: the audit packs and the AWS limits of every template (lib/domain/limits).
  const pipeline = fleet.pipeline ? addPipeline(app, fleet) : undefined;
  if (!pipeline) addFleet(app, fleet);
  app.synth();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const templates = [
    outdir,
    ...fs
      .readdirSync(outdir)
      .filter((d) => d.startsWith('assembly-'))
      .map((d) => path.join(outdir, d)),
  ].flatMap((dir) =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.template.json'))
      .map((f) => path.join(dir, f)),
  );
  const cellTemplates = templates.filter(
    (f) => !f.endsWith(`${pipelineStackName(fleet.app)}.template.json`) && !path.basename(f).startsWith('cross-region'),
  );
  const largest = Math.max(...cellTemplates.map((f) => fs.statSync(f).size));
  const pipelineTemplate = templates.find((f) => f.endsWith(`${pipelineStackName(fleet.app)}.template.json`));
  const pipelineBytes = pipelineTemplate ? fs.statSync(pipelineTemplate).size : undefined;
  fs.rmSync(outdir, { recursive: true, force: true });
  return {
    fleet: count === undefined ? 'example' : `generated`,
    cells: fleet.cells.length,
    seconds: Math.round(seconds * 10) / 10,
    msPerCell: Math.round((seconds * 1000) / fleet.cells.length),
    peakMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    templateKiB: Math.round(largest / 1024),
    ...(pipelineBytes !== undefined ? { pipelineTemplateKiB: Math.round(pipelineBytes / 1024) } : {}),
  };
}

function table(): void {
  const rows: Result[] = [];
  for (const args of [[], ['--cells', '50'], ['--cells', '200']]) {
    const out = execFileSync(process.execPath, [...process.execArgv, __filename, ...args, '--json'], { encoding: 'utf8', maxBuffer: 1 << 20 });
    rows.push(JSON.parse(out.trim().split('\n').pop()!) as Result);
  }
  process.stdout.write(
    '| fleet | cells | synth + audit (s) | ms per cell | marginal ms per added cell | peak RSS (MiB) | largest cell or router template (KiB) | pipeline template (KiB) |\n|---|---|---|---|---|---|---|---|\n',
  );
  rows.forEach((r, i) => {
    // Cost of one more cell, from the previous row: flat means stamping scales linearly.
    const marginal = i === 0 ? '–' : String(Math.round(((r.seconds - rows[i - 1].seconds) * 1000) / (r.cells - rows[i - 1].cells)));
    process.stdout.write(
      `| ${r.fleet} | ${r.cells} | ${r.seconds} | ${r.msPerCell} | ${marginal} | ${r.peakMiB} | ${r.templateKiB} | ${r.pipelineTemplateKiB ?? '-'} |\n`,
    );
  });
  process.stdout.write(`machine: ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}\n`);
}

if (process.argv.includes('--table')) {
  table();
} else {
  const cells = argValue('--cells');
  const regions = argValue('--regions');
  const result = runOnce(cells === undefined ? undefined : Number(cells), regions === undefined ? undefined : Number(regions));
  process.stdout.write(process.argv.includes('--json') ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
}
