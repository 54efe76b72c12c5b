import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { cellctl } from '../support/cli';
import { seedMapping } from '../../lib/domain/fleet';
import { bucketCounts, MappingDocument } from '../../lib/domain/mapping';
import { serializeMapping } from '../../lib/adapters/mapping-store';
import { exampleFleet, REPO_ROOT } from '../support/fleet';
import { LocalS3, startLocalS3 } from '../support/s3';

const CONFIG = path.join(REPO_ROOT, 'cells.config.ts');

const read = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as MappingDocument;

describe('cellctl mapping (files)', () => {
  let dir: string;
  let v1: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-'));
    v1 = path.join(dir, 'v1.json');
    expect((await cellctl('mapping', 'init', '--out', v1, '--config', CONFIG)).code).toBe(0);
  });

  it('init builds version 1 from the fleet', () => {
    const doc = read(v1);
    expect(doc.version).toBe(1);
    expect(doc.overrides.prefix).toEqual({ 'internal-': 'canary-eu' });
    expect(bucketCounts(doc).size).toBe(7);
    expect(doc.cells['eu-1'].endpoint).toBe('http://eu-1.orders.cells.internal');
    // Exactly what the router stacks seed, so publishing it after the first deploy writes nothing new.
    expect(fs.readFileSync(v1, 'utf8')).toBe(serializeMapping(seedMapping(exampleFleet())));
  });

  it('init refuses to overwrite without --force', async () => {
    const result = await cellctl('mapping', 'init', '--out', v1, '--config', CONFIG);
    expect(result).toMatchObject({ code: 1, err: expect.stringContaining('exists; pass --force') });
  });

  it('where --json prints key, bucket, cell and via', async () => {
    const result = await cellctl('mapping', 'where', 'internal-smoke', '--mapping', v1, '--json');
    expect(result.code).toBe(0);
    expect(Object.keys(JSON.parse(result.out))).toEqual(['key', 'bucket', 'cell', 'via']);
    expect(JSON.parse(result.out)).toMatchObject({ key: 'internal-smoke', cell: 'canary-eu', via: 'prefix' });
  });

  it('where --keys routes every key of a file like where KEY, with a count per cell', async () => {
    const keys = Array.from({ length: 300 }, (_, i) => `tenant-${i}`);
    const file = path.join(dir, 'keys.txt');
    fs.writeFileSync(file, `${keys.join('\n')}\n\ninternal-smoke\n`);
    const result = await cellctl('mapping', 'where', '--keys', file, '--mapping', v1, '--json');
    expect(result.code).toBe(0);
    const lines = result.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string; cell: string; via: string });
    expect(lines.map((l) => l.key)).toEqual([...keys, 'internal-smoke']);
    for (const key of ['tenant-0', 'tenant-299', 'internal-smoke']) {
      const one = JSON.parse((await cellctl('mapping', 'where', key, '--mapping', v1, '--json')).out);
      expect(lines.find((l) => l.key === key)).toEqual(one);
    }
    const table = await cellctl('mapping', 'where', '--keys', file, '--mapping', v1);
    expect(table.out).toMatch(/cell\s+keys/);
    expect(table.out).toMatch(/canary-eu\s+1\n/);
  });

  it('where --keys names an invalid line and routes nothing; a key and --keys together is a usage error', async () => {
    const file = path.join(dir, 'bad-keys.txt');
    fs.writeFileSync(file, 'tenant-1\nbad key\n');
    const result = await cellctl('mapping', 'where', '--keys', file, '--mapping', v1, '--json');
    expect(result).toMatchObject({ code: 1, out: '', err: expect.stringContaining('key 2 of 2') });
    expect((await cellctl('mapping', 'where', 'tenant-1', '--keys', file, '--mapping', v1)).code).toBe(2);
  });

  it('where rejects an invalid key with exit 1', async () => {
    expect(await cellctl('mapping', 'where', 'bad key', '--mapping', v1)).toMatchObject({ code: 1, err: expect.stringContaining('invalid key') });
  });

  it("gives each cell its shape's share of the buckets: a small cell (500 rps) a quarter of a standard one's (2000)", async () => {
    const shown = JSON.parse((await cellctl('mapping', 'show', '--mapping', v1, '--json')).out) as { cells: { cell: string; buckets: number }[] };
    const of = (id: string) => shown.cells.find((c) => c.cell === id)!.buckets;
    expect(of('eu-1') + of('eu-2') + of('eu-3') + of('us-1') + of('us-2') + of('us-3') + of('us-4')).toBe(16384);
    // Within 2% of each shape's share of its region's tested capacity (issue: placement that knows shapes).
    expect(Math.abs(of('eu-3') / (of('eu-1') + of('eu-2') + of('eu-3')) - 500 / 4500)).toBeLessThan(0.02);
    expect(Math.abs(of('us-4') / (of('us-1') + of('us-2') + of('us-3') + of('us-4')) - 500 / 6500)).toBeLessThan(0.02);
    expect(of('eu-3') * 4).toBeGreaterThanOrEqual(of('eu-1') - 4);
    expect(of('eu-3') * 4).toBeLessThanOrEqual(of('eu-1') + 4);
  });

  it('show prints buckets and share per cell, as a table or JSON', async () => {
    const table = await cellctl('mapping', 'show', '--mapping', v1);
    expect(table.out).toMatch(/eu-1\s+active\s+2979\s+18\.18%/);
    const asJson = JSON.parse((await cellctl('mapping', 'show', '--mapping', v1, '--json')).out);
    expect(asJson.cells.find((c: { cell: string }) => c.cell === 'canary-eu')).toMatchObject({ buckets: 0, prefixes: ['internal-'] });
  });

  it('add-cell writes a new version where only the new cell gains buckets', async () => {
    const v2 = path.join(dir, 'v2.json');
    const result = await cellctl(
      'mapping',
      'add-cell',
      'eu-4',
      '--endpoint',
      'https://eu-4.orders.cells.internal',
      '--mapping',
      v1,
      '--out',
      v2,
      '--json',
      '--routing-only',
    );
    expect(result.code).toBe(0);
    expect(result.err).toMatch(/^ROUTING ONLY: 2048 buckets now route to another cell WITHOUT their data/);
    const { diff } = JSON.parse(result.out);
    expect(diff.moves.every((m: { to: string }) => m.to === 'eu-4')).toBe(true);
    expect(read(v2).version).toBe(2);
    expect(bucketCounts(read(v2)).get('eu-4')).toBe(Math.floor(16384 / 8));
  });

  it('add-cell and drain that re-route buckets need --plan FILE (bucket moves) or --routing-only', async () => {
    const refused = await cellctl(
      'mapping',
      'add-cell',
      'eu-4',
      '--endpoint',
      'https://eu-4.example',
      '--mapping',
      v1,
      '--out',
      path.join(dir, 'nope.json'),
    );
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/re-routes 2048 buckets .*pass --plan FILE .*or --routing-only for a stateless workload/);
    expect(fs.existsSync(path.join(dir, 'nope.json'))).toBe(false);

    const plan = path.join(dir, 'add.plan.json');
    const v2 = path.join(dir, 'planned.json');
    const added = await cellctl('mapping', 'add-cell', 'eu-4', '--endpoint', 'https://eu-4.example', '--mapping', v1, '--out', v2, '--plan', plan);
    expect([added.code, added.err]).toEqual([0, expect.stringMatching(/bucket moves \(2048 buckets\); run `cellctl move plan/)]);
    // The mapping gains the cell, without buckets: the moves will give it its buckets with their data.
    expect(read(v2).cells['eu-4']).toEqual({ endpoint: 'https://eu-4.example', state: 'active' });
    expect(bucketCounts(read(v2)).get('eu-4')).toBeUndefined();
    const moves = JSON.parse(fs.readFileSync(plan, 'utf8')).moves as { buckets: string; from: string; to: string; bucketCount: number }[];
    expect(moves.every((m) => m.to === 'eu-4')).toBe(true);
    expect(moves.reduce((n, m) => n + m.bucketCount, 0)).toBe(2048);
    expect(new Set(moves.map((m) => m.from)).size).toBe(moves.length); // one move per source cell

    const drainPlan = path.join(dir, 'drain.plan.json');
    const drained = await cellctl('mapping', 'drain', 'us-4', '--mapping', v1, '--plan', drainPlan, '--json');
    expect(drained.code).toBe(0);
    expect(read(v1).version).toBe(1); // unchanged until the moves ran
    expect(JSON.parse(fs.readFileSync(drainPlan, 'utf8')).moves.every((m: { from: string }) => m.from === 'us-4')).toBe(true);
  });

  it('add-cell takes the endpoint of a fleet cell from the fleet (the name its router stacks create)', async () => {
    // A mapping from before us-4 existed: us-3 holds the last range too.
    const doc = read(v1);
    const { 'us-4': _, ...cells } = doc.cells;
    const before = path.join(dir, 'before-us-4.json');
    const last = doc.buckets.at(-1)!;
    fs.writeFileSync(before, JSON.stringify({ ...doc, cells, buckets: [...doc.buckets.slice(0, -2), { ...doc.buckets.at(-2)!, to: last.to }] }));
    const out = path.join(dir, 'with-us-4.json');
    const result = await cellctl('mapping', 'add-cell', 'us-4', '--mapping', before, '--out', out, '--config', CONFIG, '--routing-only');
    expect(result.code).toBe(0);
    expect(read(out).cells['us-4']).toEqual({ endpoint: 'http://us-4.orders.cells.internal', state: 'active' });
    const unknown = await cellctl('mapping', 'add-cell', 'eu-9', '--mapping', before, '--out', out, '--config', CONFIG, '--routing-only');
    expect(unknown).toMatchObject({ code: 1, err: expect.stringContaining('cell `eu-9` is not in') });
  });

  it('pin, unpin, prefix and quarantine that re-route a key need --plan FILE (a tenant move) or --routing-only, like add-cell and drain', async () => {
    const file = path.join(dir, 'overrides.json');
    fs.copyFileSync(v1, file);
    const before = fs.readFileSync(file, 'utf8');
    const doc = read(v1);
    const key = 'tenant-7';
    const home = await cellctl('mapping', 'where', key, '--mapping', file, '--json');
    const from = JSON.parse(home.out).cell as string;
    const other = Object.keys(doc.cells).find((c) => c !== from && doc.cells[c].state === 'active' && !c.startsWith('canary'))!;
    for (const step of [
      ['pin', key, other],
      ['prefix', 'tenant-', other],
    ]) {
      const refused = await cellctl('mapping', ...step, '--mapping', file);
      expect([step.join(' '), refused.code, refused.err.trim().split('\n').length]).toEqual([step.join(' '), 2, 1]);
      expect(refused.err).toMatch(
        step[0] === 'pin'
          ? new RegExp(`routes key ${key} from ${from} to ${other}; its data must move with it: pass --plan FILE`)
          : /a prefix re-routes every key starting with tenant-, without its data/,
      );
    }
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    // Pinning a key to the cell it is already on moves nothing: no flag needed.
    expect((await cellctl('mapping', 'pin', key, from, '--mapping', file, '--out', path.join(dir, 'same.json'))).code).toBe(0);
    // --plan: the tenant move is written, the mapping is not changed (the move's flip pins the key).
    const plan = path.join(dir, 'pin.plan.json');
    const planned = await cellctl('mapping', 'pin', key, other, '--mapping', file, '--plan', plan);
    expect([planned.code, planned.err]).toEqual([0, expect.stringContaining(`a tenant move (${key}: ${from} -> ${other}); run \`cellctl move plan`)]);
    expect(JSON.parse(fs.readFileSync(plan, 'utf8'))).toEqual({ mappingVersion: doc.version, moves: [{ tenant: key, from, to: other }] });
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
  });

  it('refuses a change over the guard rail and writes nothing, unless forced', async () => {
    const small = path.join(dir, 'small.json');
    const out = path.join(dir, 'refused.json');
    const doc = read(v1);
    fs.writeFileSync(
      small,
      JSON.stringify({
        ...doc,
        buckets: [
          { from: 0, to: 8191, cell: 'eu-1' },
          { from: 8192, to: 16383, cell: 'eu-2' },
        ],
      }),
    );
    const refused = await cellctl(
      'mapping',
      'add-cell',
      'eu-9',
      '--endpoint',
      'https://eu-9.example',
      '--mapping',
      small,
      '--out',
      out,
      '--routing-only',
    );
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/change refused; nothing written:\n {2}- moves 33\.3% of the keyspace/);
    expect(fs.existsSync(out)).toBe(false);
    expect(
      (
        await cellctl(
          'mapping',
          'add-cell',
          'eu-9',
          '--endpoint',
          'https://eu-9.example',
          '--mapping',
          small,
          '--out',
          out,
          '--force',
          '--routing-only',
        )
      ).code,
    ).toBe(0);
    expect(fs.existsSync(out)).toBe(true);
  });

  it('drain, pin, unpin, prefix and quarantine edit in place by default, each bumping the version', async () => {
    const file = path.join(dir, 'inplace.json');
    fs.copyFileSync(v1, file);
    const steps: string[][] = [
      ['drain', 'us-4', '--routing-only'],
      ['pin', 'tenant-42', 'eu-2', '--routing-only'],
      ['unpin', 'tenant-42', '--routing-only'],
      ['prefix', 'acme-', 'us-1', '--routing-only'],
      ['prefix', 'acme-', '--remove', '--routing-only'],
      ['add-cell', 'jail', '--endpoint', 'https://jail.example', '--quarantine'],
      ['quarantine', 'tenant-666', '--routing-only'],
    ];
    for (const [i, step] of steps.entries()) {
      const result = await cellctl('mapping', ...step, '--mapping', file);
      const warning = step.includes('--routing-only') ? expect.stringMatching(/^ROUTING ONLY: .*WITHOUT (their|its) data/) : '';
      expect([step.join(' '), result.code, result.err]).toEqual([step.join(' '), 0, warning]);
      expect(read(file).version).toBe(i + 2);
    }
    const doc = read(file);
    expect(doc.cells['us-4'].state).toBe('draining');
    expect(doc.overrides).toEqual({ exact: { 'tenant-666': 'jail' }, prefix: { 'internal-': 'canary-eu' } });
  });

  it('a change that fails writes nothing and exits 1', async () => {
    const before = fs.readFileSync(v1, 'utf8');
    expect(await cellctl('mapping', 'pin', 'tenant-1', 'ghost', '--mapping', v1)).toMatchObject({
      code: 1,
      err: expect.stringContaining('not in the mapping'),
    });
    expect(fs.readFileSync(v1, 'utf8')).toBe(before);
  });

  it('validate lists every problem with its path and exits 1', async () => {
    const bad = path.join(dir, 'bad.json');
    const doc = read(v1);
    fs.writeFileSync(bad, JSON.stringify({ ...doc, version: 0, buckets: doc.buckets.slice(1) }));
    const result = await cellctl('mapping', 'validate', '--mapping', bad);
    expect(result.code).toBe(1);
    expect(result.err).toContain('$.version: must be a positive integer');
    expect(result.err).toContain('$.buckets[0]: gap: buckets 0 … 2978 belong to no cell');
    expect(JSON.parse((await cellctl('mapping', 'validate', '--mapping', bad, '--json')).out).problems.length).toBe(2);
    expect((await cellctl('mapping', 'validate', '--mapping', v1)).code).toBe(0);
    expect((await cellctl('mapping', 'validate', '--mapping', v1, '--previous', v1)).err).toContain('is not greater than the current version 1');
  });

  it('diff shows moves and share', async () => {
    const v2 = path.join(dir, 'v2.json');
    const result = await cellctl('mapping', 'diff', '--previous', v1, '--mapping', v2);
    expect(result.out).toMatch(/^v1 -> v2: 2048 buckets moved \(12\.50% of the keyspace\)/);
  });

  it('names files one way in every subcommand: --mapping FILE reads, --out FILE writes, --config FILE is the fleet', async () => {
    const help = async (command: string) => (await cellctl('mapping', command, '--help')).out;
    for (const command of ['show', 'where', 'add-cell', 'drain', 'pin', 'unpin', 'prefix', 'quarantine', 'validate', 'diff', 'publish']) {
      expect([command, await help(command)]).toEqual([command, expect.stringContaining('--mapping <file>')]);
    }
    for (const command of ['init', 'add-cell', 'drain', 'pin', 'unpin', 'prefix', 'quarantine'])
      expect([command, await help(command)]).toEqual([command, expect.stringContaining('--out <file>')]);
    for (const command of ['init', 'add-cell', 'validate', 'publish', 'rollback', 'history'])
      expect([command, await help(command)]).toEqual([command, expect.stringContaining('--config <file>')]);
    // The document as an argument reads the same file.
    const v2 = path.join(dir, 'v2.json');
    expect((await cellctl('mapping', 'show', v1, '--json')).out).toBe((await cellctl('mapping', 'show', '--mapping', v1, '--json')).out);
    expect((await cellctl('mapping', 'validate', v1)).code).toBe(0);
    expect((await cellctl('mapping', 'diff', v1, v2)).out).toBe((await cellctl('mapping', 'diff', '--previous', v1, '--mapping', v2)).out);
    // Missing or doubled: a usage error naming the form.
    expect(await cellctl('mapping', 'show')).toMatchObject({ code: 2, err: 'error: no mapping document: `cellctl mapping show --mapping FILE`\n' });
    expect(await cellctl('mapping', 'validate', v1, '--mapping', v2)).toMatchObject({
      code: 2,
      err: expect.stringContaining('give the mapping document once: `cellctl mapping validate --mapping FILE`'),
    });
    expect(await cellctl('mapping', 'diff', v1)).toMatchObject({
      code: 2,
      err: 'error: give the two documents as `cellctl mapping diff --previous OLD --mapping NEW`\n',
    });
    expect(await cellctl('mapping', 'where', 'tenant-1')).toMatchObject({
      code: 2,
      err: expect.stringContaining("required option '--mapping <file>' not specified"),
    });
  });

  it('writes only regular files: a device, a pipe or a directory as --out is refused and left as it was; a symlink is written where it points', async () => {
    const v2 = path.join(dir, 'v2.json');
    for (const out of ['/dev/null', dir]) {
      const before = fs.statSync(out);
      const result = await cellctl('mapping', 'pin', 'tenant-77', 'eu-2', '--mapping', v2, '--out', out, '--routing-only');
      expect(result.code).toBe(1);
      expect(result.err.trim().split('\n').pop()).toMatch(
        new RegExp(`^error: could not write ${out}: it is (a character device|a directory); give the path of a regular file$`),
      );
      const after = fs.statSync(out);
      expect([after.isCharacterDevice(), after.isDirectory(), after.ino]).toEqual([before.isCharacterDevice(), before.isDirectory(), before.ino]);
    }
    const target = path.join(dir, 'linked-target.json');
    const link = path.join(dir, 'linked.json');
    fs.writeFileSync(target, '{}');
    fs.symlinkSync(target, link);
    expect((await cellctl('mapping', 'pin', 'tenant-77', 'eu-2', '--mapping', v2, '--out', link, '--routing-only')).code).toBe(0);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(JSON.parse(fs.readFileSync(target, 'utf8')).overrides.exact['tenant-77']).toBe('eu-2');
  });

  it('exits 2 on usage errors', async () => {
    expect((await cellctl('mapping', 'where')).code).toBe(2);
    expect((await cellctl('mapping', 'nope')).code).toBe(2);
    expect((await cellctl('mapping', 'add-cell', 'x', '--endpoint', 'https://x.example', '--mapping', v1, '--max-move', 'lots')).code).toBe(2);
    expect((await cellctl()).code).toBe(2);
  });

  it('has --help everywhere', async () => {
    for (const command of [
      'init',
      'show',
      'where',
      'add-cell',
      'drain',
      'pin',
      'unpin',
      'prefix',
      'quarantine',
      'validate',
      'diff',
      'publish',
      'rollback',
      'history',
    ]) {
      const result = await cellctl('mapping', command, '--help');
      expect([command, result.code, result.out.startsWith('Usage: cellctl mapping')]).toEqual([command, 0, true]);
    }
  });
});

describe('cellctl mapping (publish, rollback, history) against S3', () => {
  let s3: LocalS3;
  let dir: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    s3 = await startLocalS3('orders-mappings-test');
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-s3-'));
  });
  afterAll(async () => {
    process.env = saved;
    await s3.stop();
  });

  const storeFlags = () => ['--config', CONFIG, '--bucket', s3.bucket, '--bake', '0', '--force-path-style'];

  it('publishes, refuses an old version, rolls back and shows history', async () => {
    const v1 = path.join(dir, 'v1.json');
    const v2 = path.join(dir, 'v2.json');
    await cellctl('mapping', 'init', '--out', v1, '--config', CONFIG);
    await cellctl('mapping', 'pin', 'tenant-42', 'eu-2', '--mapping', v1, '--out', v2, '--routing-only');

    const first = await cellctl('mapping', 'publish', '--mapping', v1, ...storeFlags(), '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.out).groups.map((g: { group: string }) => g.group)).toEqual(['canary', 'main']);
    expect(first.err).toContain('wrote mappings/v1.json');
    // Progress goes to stderr (stdout stays the JSON above): each step, each group with its place in the order.
    expect(first.err.split('\n').filter((l) => !l.startsWith('note:'))).toEqual([
      'checking 2 router group(s) before writing anything',
      'wrote mappings/v1.json',
      'group canary (1/2): v- -> v1',
      'group main (2/2): v- -> v1',
      '',
    ]);

    // v2 pins a tenant to another cell without its data: the same guard as the change commands'.
    const unguarded = await cellctl('mapping', 'publish', '--mapping', v2, ...storeFlags(), '--group', 'canary');
    expect(unguarded.code).toBe(1);
    expect(unguarded.err).toContain('going from version 1 (in force in group `canary`) to 2 is refused; nothing written:');
    expect(unguarded.err).toContain('re-routes 1 pinned key(s) (tenant-42) to other cells without their data');
    const canaryOnly = await cellctl('mapping', 'publish', '--mapping', v2, ...storeFlags(), '--group', 'canary', '--routing-only');
    expect(canaryOnly.code).toBe(0);
    expect(canaryOnly.out).toMatch(/canary\s+v1\s+v2\s+published/);

    const stale = await cellctl('mapping', 'publish', '--mapping', v1, ...storeFlags());
    expect(stale).toMatchObject({ code: 1, err: expect.stringContaining('group `canary` is at version 2; version 1 is older') });

    const rest = await cellctl('mapping', 'publish', '--mapping', v2, ...storeFlags(), '--routing-only');
    expect(rest.out).toMatch(/canary\s+v2\s+v2\s+already-current\nmain\s+v1\s+v2\s+published/);

    const rollback = await cellctl('mapping', 'rollback', ...storeFlags());
    expect(rollback.code).toBe(0);
    expect(rollback.out).toContain('restored the content of v1 as v3');

    const history = JSON.parse((await cellctl('mapping', 'history', ...storeFlags(), '--json')).out);
    expect(history.map((h: { version: number; groups: string[] }) => [h.version, h.groups])).toEqual([
      [3, ['canary', 'main']],
      [2, []],
      [1, []],
    ]);
  });

  it('guards a hand-edited document as the change commands do, against the version in force; pull writes that version', async () => {
    const pulled = path.join(dir, 'pulled.json');
    const pull = await cellctl('mapping', 'pull', '--out', pulled, ...storeFlags());
    expect(pull).toMatchObject({ code: 0, out: expect.stringMatching(/^wrote .*pulled\.json \(v3, in force in group canary\)\n$/) });
    const inForce = JSON.parse(fs.readFileSync(pulled, 'utf8'));
    expect(inForce.version).toBe(3);
    // By hand: every bucket of the first cell to the second (a third of the keyspace and an emptied cell).
    const first: string = inForce.buckets[0].cell;
    const second: string = inForce.buckets[inForce.buckets.length - 1].cell;
    const edited = path.join(dir, 'edited.json');
    const buckets = inForce.buckets.map((b: { cell: string }) => (b.cell === first ? { ...b, cell: second } : b));
    fs.writeFileSync(edited, JSON.stringify({ ...inForce, version: 4, buckets }));
    const refused = await cellctl('mapping', 'publish', '--mapping', edited, ...storeFlags(), '--routing-only');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`leaves active cell \`${first}\` with no buckets`);
    const moved = await cellctl('mapping', 'publish', '--mapping', edited, ...storeFlags(), '--force');
    expect(moved.code).toBe(1);
    expect(moved.err).toMatch(/re-routes \d+ bucket\(s\) to other cells without their data/);
    expect(JSON.parse((await cellctl('mapping', 'history', ...storeFlags(), '--json')).out)[0].version).toBe(3);
    // A jump ahead is refused whatever the flags.
    fs.writeFileSync(edited, JSON.stringify({ ...inForce, version: 2 ** 52 - 1 }));
    const jump = await cellctl('mapping', 'publish', '--mapping', edited, ...storeFlags(), '--force', '--routing-only');
    expect(jump.err).toContain(`version ${2 ** 52 - 1} is more than 1000 past the newest published version 3`);
  });

  it('repairs an invalid group pointer onto a valid published version, and leaves valid ones alone', async () => {
    const client = new S3Client({
      endpoint: s3.endpoint,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'groups/main/mapping.json', Body: '{"version": "broken"' }));
    client.destroy();
    const blocked = await cellctl('mapping', 'rollback', ...storeFlags());
    expect(blocked.code).toBe(1);
    expect(blocked.err).toContain(
      'the routers keep their last-known-good mapping; `cellctl mapping repair` points the group at a valid published version again',
    );
    const unknown = await cellctl('mapping', 'repair', ...storeFlags(), '--to', '99');
    expect(unknown).toMatchObject({ code: 1, err: expect.stringContaining('no version 99 in s3://orders-mappings-test') });
    const repaired = await cellctl('mapping', 'repair', ...storeFlags(), '--json');
    expect(repaired.code).toBe(0);
    expect(JSON.parse(repaired.out).map((r: { group: string; status: string; version: number }) => [r.group, r.status, r.version])).toEqual([
      ['canary', 'valid', 3],
      ['main', 'repaired', 3],
    ]);
    expect(repaired.err).toMatch(/^group main in s3:\/\/orders-mappings-test: invalid \(\$: not valid JSON.*\) -> v3\n$/);
  });

  it('bounds --bake to a day, as router.publishBakeSeconds is, before reading anything', async () => {
    for (const bake of ['1e9', '86401', '-1', '2.5']) {
      const result = await cellctl('mapping', 'history', '--config', CONFIG, '--bucket', s3.bucket, '--bake', bake, '--force-path-style');
      expect([bake, result.code, result.err.trim()]).toEqual([bake, 2, `error: --bake ${bake}: give whole seconds from 0 to 86400 (a day)`]);
    }
  });

  it('reports an unreachable or failing bucket with exit 1', async () => {
    s3.fault({ status: 503, code: 'SlowDown' });
    // One attempt: the SDK's retries of a 503 (its backoff, not cellctl's) would only add seconds.
    process.env.AWS_MAX_ATTEMPTS = '1';
    try {
      const result = await cellctl('mapping', 'history', ...storeFlags());
      expect(result.code).toBe(1);
      expect(result.err).toMatch(/s3:\/\/orders-mappings-test\/groups\/canary\/mapping.json failed/);
    } finally {
      s3.fault(undefined);
      delete process.env.AWS_MAX_ATTEMPTS;
    }
  });
});
