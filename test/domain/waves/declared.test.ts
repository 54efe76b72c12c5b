/**
 * Waves declared on the cells (`wave: N`, issue: waves you can declare): validated, planned exactly
 * as declared, and `cellctl plan` reporting the cells a change moves to another wave than the
 * pipeline last synthesized, before anything is synthesized.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { FleetConfigError, FleetInput, fleetProblems, resolveFleet } from '../../../lib/domain/fleet';
import { planWaves, waveChanges, wavesOfPipeline } from '../../../lib/domain/waves';
import { cellctl } from '../../support/cli';
import { validInput } from '../../support/fleet';

/** The example fleet's waves as `cellctl plan` cuts them, declared. */
const DECLARED: Record<string, number> = { 'canary-eu': 1, 'eu-1': 2, 'us-1': 3, 'eu-2': 4, 'eu-3': 4, 'us-2': 5, 'us-3': 5, 'us-4': 6 };
const declared = (waves: Record<string, number> = DECLARED): FleetInput => {
  const input = validInput();
  return { ...input, cells: input.cells.map((c) => ({ ...c, wave: waves[c.id] })) };
};

it('plans exactly the declared waves: a wave of one cell is a single, of more a group', () => {
  const plan = planWaves(resolveFleet(declared()));
  expect(plan.waves.map((w) => [w.name, w.cells])).toEqual([
    ['wave-1-canary', ['canary-eu']],
    ['wave-2-single', ['eu-1']],
    ['wave-3-single', ['us-1']],
    ['wave-4-group', ['eu-2', 'eu-3']],
    ['wave-5-group', ['us-2', 'us-3']],
    ['wave-6-single', ['us-4']],
  ]);
  expect(plan.waves[5].bakeSeconds).toBe(validInput().waves.bakeSeconds.single);
});

it('refuses declarations that are partial, gapped, misplace the canary, overfill a wave or open a region with a group', () => {
  const some = validInput();
  expect(fleetProblems({ ...some, cells: some.cells.map((c, i) => (i < 2 ? { ...c, wave: i + 1 } : c)) })).toEqual(
    expect.arrayContaining([
      expect.stringMatching(
        /^cells: 2 of 8 cells declare a wave; declare one on every cell or on none \(no wave: eu-2, eu-3, us-1, us-2, us-3, …\)$/,
      ),
    ]),
  );
  expect(fleetProblems(declared({ ...DECLARED, 'us-4': 8 }))).toEqual(
    expect.arrayContaining(['cells: waves 1, 2, 3, 4, 5, 8 are declared; number them 1, 2, … without a gap (wave 6 holds no cell)']),
  );
  expect(fleetProblems(declared({ ...DECLARED, 'canary-eu': 2, 'eu-1': 1 }))).toEqual(
    expect.arrayContaining([
      'cells.canary-eu.wave: 2, but canary-eu is a canary cell; the canary cells are wave 1',
      "cells.eu-1.wave: 1 is the canary's wave; eu-1 is not a canary (give it wave 2 or later, or mark it canary)",
    ]),
  );
  expect(fleetProblems(declared({ ...DECLARED, 'us-1': 5 }))).toEqual(
    expect.arrayContaining([
      "cells: wave 5 is us-east-1's first and holds 3 cells; a region's first wave is one cell alone (or the canary), so a bad change reaches one of its cells first",
    ]),
  );
  const small = { ...declared({ ...DECLARED, 'us-4': 5 }), waves: { ...validInput().waves, maxCellsPerWave: 2 } };
  expect(fleetProblems(small)).toEqual(expect.arrayContaining(['cells: wave 5 holds 3 cells, over waves.maxCellsPerWave (2); split it']));
  expect(() => resolveFleet(declared({ ...DECLARED, 'eu-2': 0 }))).toThrow(FleetConfigError);
});

/** A pipeline template as the pipeline stack writes it: one stage per wave, a clear action, one deploy per cell. */
function pipelineTemplate(waves: Record<string, number>): object {
  const byWave = new Map<number, string[]>();
  for (const [cell, n] of Object.entries(waves)) byWave.set(n, [...(byWave.get(n) ?? []), cell]);
  const stages = [...byWave].map(([n, cells]) => ({
    Name: cells.length === 1 ? `cell-${cells[0]}` : `wave-${n}-group`,
    Actions: [
      { Name: `clear-wave-${n}-${n === 1 ? 'canary' : cells.length === 1 ? 'single' : 'group'}` },
      ...cells.map((c) => ({ Name: cells.length === 1 ? `orders-cell-${c}.Deploy` : `cell-${c}.orders-cell-${c}.Deploy` })),
      { Name: `bake-wave-${n}` },
    ],
  }));
  return {
    Resources: {
      Pipeline: { Type: 'AWS::CodePipeline::Pipeline', Properties: { Stages: [{ Name: 'Source', Actions: [{ Name: 'src' }] }, ...stages] } },
    },
  };
}

describe('a change that reorders deployed waves', () => {
  const cut: Record<string, number> = { 'canary-eu': 1, 'eu-1': 2, 'us-1': 3, 'eu-2': 4, 'eu-3': 4, 'us-2': 5, 'us-3': 5, 'us-4': 5 };
  // A third region's first cell, added: the cut gives it a single wave, and every group after moves down one.
  const withRegion = (input: FleetInput): FleetInput => ({
    ...input,
    regions: { ...input.regions, 'us-west-2': { availabilityZones: ['usw2-az1', 'usw2-az2', 'usw2-az3'] } },
    cells: [
      ...input.cells,
      {
        id: 'usw-1',
        region: 'us-west-2',
        cidr: '10.2.0.0/20',
        shape: 'standard',
        account: '444444444499',
        ...(input.cells[0].wave ? { wave: 7 } : {}),
      },
    ],
  });

  it("reads each cell's wave from the synthesized pipeline", () => {
    expect(Object.fromEntries(wavesOfPipeline(pipelineTemplate(cut) as never, 'orders'))).toEqual(cut);
  });

  it('is found when the cut shifts the waves, and not when they are declared', () => {
    const plan = planWaves(resolveFleet(withRegion(validInput())));
    const shifted = waveChanges(new Map(Object.entries(cut)), plan);
    // The cut reshuffles: the new region's first cell takes a single wave, and the cells after it move.
    expect(shifted.length).toBeGreaterThan(0);
    const waveOf = new Map(plan.waves.flatMap((w) => w.cells.map((c) => [c, w.index] as const)));
    for (const [id, before] of Object.entries(cut)) {
      const change = shifted.find((c) => c.cell === id);
      if (change) expect(change).toEqual({ cell: id, from: before, to: waveOf.get(id) });
      else expect(waveOf.get(id)).toBe(before);
    }
    // The new cell was in no deployed wave: not a change.
    expect(shifted.map((c) => c.cell)).not.toContain('usw-1');
    expect(waveChanges(new Map(Object.entries(DECLARED)), planWaves(resolveFleet(withRegion(declared()))))).toEqual([]);
  });

  it('is reported by cellctl plan against the last synthesized pipeline, in text and JSON', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-against-'));
    try {
      const moved = { ...cut, 'eu-2': 5, 'us-4': 4 };
      fs.writeFileSync(path.join(dir, 'orders-pipeline.template.json'), JSON.stringify(pipelineTemplate(moved)));
      const text = await cellctl('plan', '--against', dir);
      expect(text.code).toBe(0);
      expect(text.out).toContain(`2 cell(s) change wave against the pipeline last synthesized in ${dir}: eu-2 5 -> 4, us-4 4 -> 5;`);
      const parsed = JSON.parse((await cellctl('plan', '--against', dir, '--json')).out) as { waveChanges: unknown[] };
      expect(parsed.waveChanges).toEqual([
        { cell: 'eu-2', from: 5, to: 4 },
        { cell: 'us-4', from: 4, to: 5 },
      ]);
      // No assembly there: nothing to compare, no report.
      expect((await cellctl('plan', '--against', path.join(dir, 'none'))).out).not.toContain('change wave');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
