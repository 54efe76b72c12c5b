/**
 * Home regions through `cellctl mapping`: a fleet file without `homes` makes today's document;
 * with them, `convert` turns it into home tables moving no tenant, `rehome` brings a region's
 * table to its cells, and `where` names each key's home (`--region` to ask as a tenant of a region).
 * `rehome --plan` writes the bucket moves a table needs.
 */
import * as fs from 'fs';
import * as path from 'path';
import { cellctl } from '../support/cli';
import { configDirs } from '../support/fleet';
import { lookupMany, MappingDocument } from '../../lib/domain/mapping';

const dirs = configDirs();
const plain = dirs.config();
const homes = dirs.config((text) =>
  text.replace(/^ {2}cells: \[/m, "  homes: { defaultRegion: 'us-east-1', prefixes: { 'eu-': 'eu-west-1' } },\n  cells: ["),
);
const read = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as MappingDocument;
const v1 = path.join(plain, 'v1.json');
const v2 = path.join(homes, 'v2.json');
const keys = [...Array.from({ length: 300 }, (_, i) => `eu-k${i}`), ...Array.from({ length: 300 }, (_, i) => `k${i}`)];
const EU = new Set(['canary-eu', 'eu-1', 'eu-2', 'eu-3']);

beforeAll(async () => {
  expect(fs.readFileSync(path.join(homes, 'cells.config.ts'), 'utf8')).toContain("homes: { defaultRegion: 'us-east-1'");
  const init = await cellctl('mapping', 'init', '--config', path.join(plain, 'cells.config.ts'), '--out', v1);
  expect([init.code, init.err]).toEqual([0, '']);
});

it('convert: schema 2, no tenant moves, and the next steps said', async () => {
  const result = await cellctl('mapping', 'convert', '--mapping', v1, '--out', v2, '--config', path.join(homes, 'cells.config.ts'));
  expect(result.code).toBe(0);
  expect(result.out).toContain('0 buckets');
  expect(result.err).toContain('deploy the routers with the fleet');
  const [before, after] = [read(v1), read(v2)];
  expect(after.schemaVersion).toBe(2);
  expect(lookupMany(after, keys).map((r) => r.cell)).toEqual(lookupMany(before, keys).map((r) => r.cell));
  const again = await cellctl(
    'mapping',
    'convert',
    '--mapping',
    v2,
    '--out',
    path.join(homes, 'x.json'),
    '--config',
    path.join(homes, 'cells.config.ts'),
  );
  expect([again.code, again.err]).toEqual([1, expect.stringContaining("already has the fleet file's home tables")]);
  expect(fs.existsSync(path.join(homes, 'x.json'))).toBe(false);
  const noHomes = await cellctl(
    'mapping',
    'convert',
    '--mapping',
    v1,
    '--out',
    path.join(plain, 'x.json'),
    '--config',
    path.join(plain, 'cells.config.ts'),
  );
  expect([noHomes.code, noHomes.err]).toEqual([2, expect.stringContaining('has no `homes`')]);
});

it('rehome eu-west-1: only EU tenants move, to EU cells; where names each home, --region asks as a tenant of a region', async () => {
  const v3 = path.join(homes, 'v3.json');
  const config = path.join(homes, 'cells.config.ts');
  const refused = await cellctl('mapping', 'rehome', 'eu-west-1', '--mapping', v2, '--out', v3, '--config', config, '--routing-only');
  expect([refused.code, refused.err]).toEqual([1, expect.stringContaining('of the keyspace (limit 25.0%)')]);
  const result = await cellctl('mapping', 'rehome', 'eu-west-1', '--mapping', v2, '--out', v3, '--config', config, '--routing-only', '--force');
  expect([result.code, result.err]).toEqual([0, expect.stringContaining('ROUTING ONLY')]);
  const [before, after] = [lookupMany(read(v2), keys), lookupMany(read(v3), keys)];
  const moved = keys.filter((_, i) => before[i].cell !== after[i].cell);
  expect(moved.length).toBeGreaterThan(0);
  expect(moved.every((k) => k.startsWith('eu-'))).toBe(true);
  expect(after.filter((r) => r.key.startsWith('eu-') && r.via === 'bucket').every((r) => EU.has(r.cell))).toBe(true);

  const where = await cellctl('mapping', 'where', 'eu-k1', '--mapping', v3, '--json');
  expect(JSON.parse(where.out)).toMatchObject({ key: 'eu-k1', home: 'eu-west-1', via: 'bucket' });
  const asEu = await cellctl('mapping', 'where', 'k1', '--mapping', v3, '--region', 'eu-west-1', '--json');
  const line = JSON.parse(asEu.out) as { cell: string; home: string; bucket: number };
  expect([EU.has(line.cell), line.home, line.bucket >= read(v3).bucketCount]).toEqual([true, 'eu-west-1', true]);
  const unknown = await cellctl('mapping', 'where', 'k1', '--mapping', v3, '--region', 'ap-south-1');
  expect([unknown.code, unknown.err]).toEqual([2, expect.stringContaining('no home table of')]);
});

it('rehome --plan writes the bucket moves (the mover then refuses them for home tables: test/operations/moves/homes.test.ts)', async () => {
  const plan = path.join(homes, 'rehome-plan.json');
  const result = await cellctl(
    'mapping',
    'rehome',
    'eu-west-1',
    '--mapping',
    v2,
    '--config',
    path.join(homes, 'cells.config.ts'),
    '--plan',
    plan,
    '--force',
  );
  expect(result.code).toBe(0);
  expect(fs.existsSync(plan)).toBe(true);
});
