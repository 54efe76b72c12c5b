/**
 * `cellctl mapping show --by-region`: the mapping's cells by the fleet file's regions, each cell's
 * share of its region's buckets beside its shape's share of the region's tested capacity.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { cellctl } from '../support/cli';
import { REPO_ROOT } from '../support/fleet';
import type { RegionShare } from '../../lib/cli/mapping-commands';

const config = path.join(REPO_ROOT, 'cells.config.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'by-region-'));
const file = path.join(dir, 'mapping.json');

beforeAll(async () => {
  expect((await cellctl('mapping', 'init', '--config', config, '--out', file)).code).toBe(0);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it("groups the cells by region, with each one's share of the region against its shape's share of its tested capacity", async () => {
  const r = await cellctl('mapping', 'show', file, '--by-region', '--config', config, '--json');
  expect(r.code).toBe(0);
  const { regions } = JSON.parse(r.out) as { regions: RegionShare[] };
  expect(regions.map((x) => x.region)).toEqual(['eu-west-1', 'us-east-1']);
  expect(regions.reduce((n, x) => n + x.buckets, 0)).toBe(16384);
  const eu = regions[0];
  expect(eu.cells.map((c) => [c.cell, c.shape])).toEqual([
    ['canary-eu', 'standard'],
    ['eu-1', 'standard'],
    ['eu-2', 'standard'],
    ['eu-3', 'small'],
  ]);
  // The canary takes its prefix only; the others split the region's capacity 2000 : 2000 : 500.
  expect(eu.cells.find((c) => c.cell === 'canary-eu')!.capacityShare).toBe(0);
  expect(eu.cells.find((c) => c.cell === 'eu-3')!.capacityShare).toBeCloseTo(500 / 4500);
  expect(eu.cells.reduce((n, c) => n + c.shareOfRegion, 0)).toBeCloseTo(1);
  const text = await cellctl('mapping', 'show', file, '--by-region', '--config', config);
  expect(text.out).toMatch(/^eu-west-1: \d+ buckets \(\d+\.\d%\)$/m);
  expect(text.out).toMatch(/^eu-3 +small +general +active +\d+ +\d+\.\d% +11\.1%$/m);
});

it('puts a cell the fleet file does not name under region unknown', async () => {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { cells: Record<string, unknown> };
  const other = path.join(dir, 'other.json');
  fs.writeFileSync(other, JSON.stringify({ ...doc, cells: { ...doc.cells, 'old-1': { endpoint: 'http://10.9.9.9:8080', state: 'draining' } } }));
  const r = await cellctl('mapping', 'show', other, '--by-region', '--config', config, '--json');
  expect(r.code).toBe(0);
  const { regions } = JSON.parse(r.out) as { regions: RegionShare[] };
  expect(regions.find((x) => x.region === 'unknown')!.cells).toEqual([
    expect.objectContaining({ cell: 'old-1', shape: '-', tier: '-', state: 'draining', buckets: 0 }),
  ]);
});
