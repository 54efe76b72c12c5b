/**
 * Tiers and dedicated cells through `cellctl mapping`: the first mapping gives them no buckets and
 * pins the dedicated tenant, add-cell of a dedicated cell takes no bucket and says how to pin its
 * tenant, drain never hands buckets to them, and a change that would put another tenant on a
 * dedicated cell (or buckets on either) is refused and writes nothing.
 */
import * as fs from 'fs';
import * as path from 'path';
import { cellctl, cellctlIn } from '../support/cli';
import { configDirs } from '../support/fleet';
import { bucketCounts, lookup, MappingDocument } from '../../lib/domain/mapping';

const dirs = configDirs();
// us-3 is dedicated to acme-corp, eu-2 serves the premium tier; the other cells are the default tier's.
const dir = dirs.config((text) =>
  text
    .replace(
      "{ id: 'eu-2', region: 'eu-west-1', cidr: '10.0.32.0/20', shape: 'standard' }",
      "{ id: 'eu-2', region: 'eu-west-1', cidr: '10.0.32.0/20', shape: 'standard', tier: 'premium' }",
    )
    .replace(
      "{ id: 'us-3', region: 'us-east-1', cidr: '10.1.32.0/20', shape: 'standard' }",
      "{ id: 'us-3', region: 'us-east-1', cidr: '10.1.32.0/20', shape: 'standard', dedicatedTo: 'acme-corp' }",
    ),
);
const config = path.join(dir, 'cells.config.ts');
const v1 = path.join(dir, 'v1.json');
const read = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as MappingDocument;

beforeAll(async () => {
  expect(fs.readFileSync(config, 'utf8')).toContain("dedicatedTo: 'acme-corp'");
  expect(fs.readFileSync(config, 'utf8')).toContain("tier: 'premium'");
  const init = await cellctl('mapping', 'init', '--config', config, '--out', v1);
  expect([init.code, init.err]).toEqual([0, '']);
});

it('init: no bucket on the dedicated or the premium cell, the dedicated tenant pinned to its cell', () => {
  const doc = read(v1);
  const counts = bucketCounts(doc);
  expect([counts.get('us-3') ?? 0, counts.get('eu-2') ?? 0]).toEqual([0, 0]);
  expect(doc.overrides.exact).toEqual({ 'acme-corp': 'us-3' });
  expect(lookup(doc, 'acme-corp').cell).toBe('us-3');
});

it('refuses to pin another tenant to the dedicated cell, or a prefix, and writes nothing', async () => {
  const before = fs.readFileSync(v1, 'utf8');
  const pin = await cellctl('mapping', 'pin', 'globex', 'us-3', '--mapping', v1, '--config', config, '--routing-only', '--force');
  expect(pin.code).toBe(1);
  expect(pin.err).toContain("change refused by the fleet's tiers and dedicated cells; nothing written:");
  expect(pin.err).toContain('cell `us-3` is dedicated to `acme-corp`; tenant `globex` is pinned to it too (pin it to a cell of its tier)');
  const prefix = await cellctl('mapping', 'prefix', 'glob', 'us-3', '--mapping', v1, '--config', config, '--routing-only');
  expect(prefix.code).toBe(1);
  expect(prefix.err).toContain('prefix `glob` routes other tenants to it');
  expect(fs.readFileSync(v1, 'utf8')).toBe(before);
  // Its own tenant, and other tenants to a shared cell, are fine.
  const out = path.join(dir, 'pinned.json');
  expect((await cellctl('mapping', 'pin', 'globex', 'us-1', '--mapping', v1, '--out', out, '--config', config, '--routing-only')).code).toBe(0);
});

it('add-cell of a dedicated cell gives it no bucket and says how to pin its tenant with its data', async () => {
  // The mapping as it was before us-3 joined: without the cell and its pin.
  const doc = read(v1);
  const { 'us-3': _dropped, ...cells } = doc.cells;
  const before = path.join(dir, 'without-us-3.json');
  fs.writeFileSync(before, JSON.stringify({ ...doc, cells, overrides: { ...doc.overrides, exact: {} } }));
  const out = path.join(dir, 'with-us-3.json');
  const added = await cellctl('mapping', 'add-cell', 'us-3', '--mapping', before, '--out', out, '--config', config);
  expect(added.code).toBe(0);
  expect(added.err).toContain(
    `us-3 is dedicated to acme-corp: it holds no buckets; pin its tenant there with its data: \`cellctl mapping pin acme-corp us-3 --mapping ${out} --plan pin-acme-corp.json\``,
  );
  const after = read(out);
  expect(after.cells['us-3']).toEqual({ endpoint: 'http://us-3.orders.cells.internal', state: 'active' });
  expect(bucketCounts(after).get('us-3') ?? 0).toBe(0);
  expect(after.buckets).toEqual(doc.buckets);
  // The premium cell likewise.
  const { 'eu-2': _eu2, ...others } = doc.cells;
  const noPremium = path.join(dir, 'without-eu-2.json');
  fs.writeFileSync(noPremium, JSON.stringify({ ...doc, cells: others }));
  const premium = await cellctl('mapping', 'add-cell', 'eu-2', '--mapping', noPremium, '--out', out, '--config', config);
  expect(premium.code).toBe(0);
  expect(premium.err).toContain(
    'eu-2 is of tier premium: it holds no buckets; its tenants come by `cellctl place TENANT --expected-rps R --tier premium`',
  );
  expect(bucketCounts(read(out)).get('eu-2') ?? 0).toBe(0);
});

it('drain hands a cell’s buckets to the default tier only', async () => {
  const out = path.join(dir, 'drained.json');
  const drained = await cellctl('mapping', 'drain', 'us-4', '--mapping', v1, '--out', out, '--config', config, '--routing-only');
  expect(drained.code).toBe(0);
  const counts = bucketCounts(read(out));
  expect([counts.get('us-4') ?? 0, counts.get('us-3') ?? 0, counts.get('eu-2') ?? 0]).toEqual([0, 0, 0]);
  expect([...counts.keys()].sort()).toEqual(['eu-1', 'eu-3', 'us-1', 'us-2']);
});

it('mapping show --by-region names each cell’s tier, and the dedicated one’s tenant', async () => {
  const shown = await cellctl('mapping', 'show', v1, '--by-region', '--config', config);
  expect(shown.code).toBe(0);
  expect(shown.out).toMatch(/^eu-2 +standard +premium +active +0 +0\.0% +0\.0%$/m);
  expect(shown.out).toMatch(/^us-3 +standard +dedicated to acme-corp +active +0 +0\.0% +0\.0%$/m);
});

it('goes on, with a warning, where the cells.config.ts beside it does not load; an explicit --config must', async () => {
  // The shipped config without its accounts file: it does not load until `cellctl accounts ensure`.
  const broken = dirs.config(undefined, JSON.stringify({ schemaVersion: 1, cells: {} }));
  const out = path.join(broken, 'pinned.json');
  const pinned = await cellctlIn(broken, 'mapping', 'pin', 'globex', 'us-1', '--mapping', v1, '--out', out, '--routing-only');
  expect(pinned.code).toBe(0);
  expect(pinned.err).toMatch(/^warning: cells\.config\.ts does not load, so this change is not checked against its tiers and dedicated cells/);
  const explicit = await cellctlIn(
    broken,
    'mapping',
    'pin',
    'globex',
    'us-1',
    '--mapping',
    v1,
    '--out',
    out,
    '--routing-only',
    '--config',
    'cells.config.ts',
  );
  expect(explicit.code).toBe(1);
  expect(explicit.err).toContain('no account');
});
