/**
 * `cellctl mapping show --by-region`: the mapping's cells by the fleet file's regions, each cell's
 * share of its region's buckets beside its shape's share of the region's tested capacity; `mapping
 * diff --by-region`, the moves within and across regions; `plan`, the same view per region.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { cellctl } from '../support/cli';
import { REPO_ROOT } from '../support/fleet';
import type { RegionShare } from '../../lib/cli/mapping-commands';
import type { RegionMove } from '../../lib/domain/fleet';
import { lookup, MappingDocument } from '../../lib/domain/mapping';

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

describe('mapping diff --by-region', () => {
  it('counts the moves within each region, and warns when tenants would leave their region', async () => {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as MappingDocument;
    // eu-3's first range goes to eu-1 (within eu-west-1), us-4's to eu-2 (across), and one eu tenant is pinned to a us cell.
    const eu3 = doc.buckets.findIndex((r) => r.cell === 'eu-3');
    const us4 = doc.buckets.findIndex((r) => r.cell === 'us-4');
    const eu3Size = doc.buckets[eu3].to - doc.buckets[eu3].from + 1;
    const us4Size = doc.buckets[us4].to - doc.buckets[us4].from + 1;
    const tenant = Array.from({ length: 1000 }, (_, i) => `t-${i}`).find((k) => lookup(doc, k).cell === 'eu-1')!;
    const next: MappingDocument = {
      ...doc,
      version: doc.version + 1,
      buckets: doc.buckets.map((r, i) => (i === eu3 ? { ...r, cell: 'eu-1' } : i === us4 ? { ...r, cell: 'eu-2' } : r)),
      overrides: { ...doc.overrides, exact: { [tenant]: 'us-1' } },
    };
    const after = path.join(dir, 'next.json');
    fs.writeFileSync(after, JSON.stringify(next));
    const r = await cellctl('mapping', 'diff', file, after, '--by-region', '--config', config, '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { regions: RegionMove[] }).regions).toEqual([
      { from: 'eu-west-1', to: 'eu-west-1', buckets: eu3Size, overrides: 0 },
      { from: 'us-east-1', to: 'eu-west-1', buckets: us4Size, overrides: 0 },
      { from: 'eu-west-1', to: 'us-east-1', buckets: 0, overrides: 1 },
    ]);
    const text = await cellctl('mapping', 'diff', file, after, '--by-region', '--config', config);
    expect(text.out).toMatch(new RegExp(`^within eu-west-1 +${eu3Size} +0$`, 'm'));
    expect(text.out).toMatch(new RegExp(`^us-east-1 -> eu-west-1 +${us4Size} +0$`, 'm'));
    expect(text.out).toContain(`${us4Size} bucket(s) and 1 override(s) move tenants to another region: their data leaves its region`);
    // Without --by-region, the diff is what it was.
    expect((await cellctl('mapping', 'diff', file, after)).out).not.toContain('by region');
  });
});

describe('plan', () => {
  it("ends with each region's cells and their share of its buckets, from the first mapping or --mapping", async () => {
    const r = await cellctl('plan', '--config', config, '--against', path.join(dir, 'none'), '--json');
    expect(r.code).toBe(0);
    const { regions } = JSON.parse(r.out) as { regions: RegionShare[] };
    expect(regions.map((x) => [x.region, x.cells.map((c) => c.cell)])).toEqual([
      ['eu-west-1', ['canary-eu', 'eu-1', 'eu-2', 'eu-3']],
      ['us-east-1', ['us-1', 'us-2', 'us-3', 'us-4']],
    ]);
    for (const region of regions) for (const c of region.cells) expect(Math.abs(c.shareOfRegion - c.capacityShare)).toBeLessThanOrEqual(0.02);
    // Another document: its shares.
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as MappingDocument;
    const other = path.join(dir, 'all-on-eu-1.json');
    fs.writeFileSync(other, JSON.stringify({ ...doc, buckets: [{ from: 0, to: doc.bucketCount - 1, cell: 'eu-1' }] }));
    const text = await cellctl('plan', '--config', config, '--against', path.join(dir, 'none'), '--mapping', other);
    expect(text.out).toContain(`the cells by region, with their share of its buckets in ${other}:`);
    expect(text.out).toMatch(/^eu-1 +standard +general +active +16384 +100\.0% +44\.4%$/m);
  });
});
