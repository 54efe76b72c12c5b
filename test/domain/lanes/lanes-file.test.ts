import * as fs from 'fs';
import * as path from 'path';
import { extendShards, initLanes, readLanesFile, writeLanesFile } from '../../../lib/domain/lanes';
import * as os from 'os';

const testTmpDir = (name: string) => fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));

describe('cells.lanes.json', () => {
  const settings = { count: 8, perTenant: 2, maxOverlap: 1 };

  it('is created once, kept when it fits, extended (old shards first) when lanes are added', () => {
    const file = path.join(testTmpDir('lanes-file'), 'cells.lanes.json');
    const created = initLanes(settings, readLanesFile(file));
    expect(created.action).toBe('created');
    writeLanesFile(file, created.file);
    expect(readLanesFile(file)).toEqual(created.file);
    expect(initLanes(settings, readLanesFile(file)).action).toBe('unchanged');
    const grown = initLanes({ ...settings, count: 10 }, readLanesFile(file));
    expect(grown.action).toBe('extended');
    expect(grown.file.shards.slice(0, 28)).toEqual(created.file.shards);
    expect(grown.added).toHaveLength(45 - 28);
  });

  it('refuses fewer lanes or another shard size, saying what it would do to tenants', () => {
    const stored = { schemaVersion: 1 as const, ...settings, shards: extendShards(settings) };
    expect(() => initLanes({ ...settings, count: 6 }, stored)).toThrow(/Removing lanes moves the tenants of every shard that uses them/);
    expect(() => initLanes({ count: 8, perTenant: 3, maxOverlap: 1 }, stored)).toThrow(/changes every tenant’s default shard/);
  });

  it('names a malformed file and how to fix it', () => {
    const file = path.join(testTmpDir('lanes-file-bad'), 'cells.lanes.json');
    fs.writeFileSync(file, '{"schemaVersion": 1, "count": 8}');
    expect(() => readLanesFile(file, 'cells.lanes.json')).toThrow(/^cells.lanes.json: expected \{"schemaVersion": 1, "count": 8/);
    fs.writeFileSync(
      file,
      JSON.stringify({
        schemaVersion: 1,
        ...settings,
        shards: [
          [1, 2],
          [1, 2],
        ],
      }),
    );
    expect(() => readLanesFile(file, 'cells.lanes.json')).toThrow('cells.lanes.json:\n  - shards[1] repeats shards[0] (1-2)');
  });
});
