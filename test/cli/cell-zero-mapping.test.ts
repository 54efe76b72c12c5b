import * as fs from 'fs';
import * as path from 'path';
import { cellctl } from '../support/cli';
import { loadFleet, seedMapping } from '../../lib/domain/fleet';
import { MappingDocument } from '../../lib/domain/mapping';
import { serializeMapping } from '../../lib/adapters/mapping-store';
import { configDirs } from '../support/fleet';
import { withCellZero } from '../support/cell-zero';

describe('cellctl mapping init with a cell zero', () => {
  const dirs = configDirs();

  it('maps every bucket to cell zero, exactly as the router stacks seed it', async () => {
    const dir = dirs.config(withCellZero);
    const config = path.join(dir, 'cells.config.ts');
    const out = path.join(dir, 'v1.json');
    const result = await cellctl('mapping', 'init', '--out', out, '--config', config);
    expect(result).toMatchObject({ code: 0, out: expect.stringContaining('16384 buckets over 1 cells') });
    const doc = JSON.parse(fs.readFileSync(out, 'utf8')) as MappingDocument;
    expect(doc.buckets).toEqual([{ from: 0, to: 16383, cell: 'zero' }]);
    expect(doc.cells.zero).toEqual({ endpoint: 'http://zero.orders.cells.internal', state: 'active' });
    expect(fs.readFileSync(out, 'utf8')).toBe(serializeMapping(seedMapping(loadFleet(config))));
    const where = await cellctl('mapping', 'where', 'internal-smoke', '--mapping', out, '--json');
    expect(JSON.parse(where.out)).toMatchObject({ cell: 'zero', via: 'bucket' });
  });

  it("takes cell zero's endpoint from --endpoints like any cell's", async () => {
    const dir = dirs.config(withCellZero);
    const endpoints = path.join(dir, 'endpoints.json');
    fs.writeFileSync(endpoints, JSON.stringify({ zero: 'http://127.0.0.1:8080' }));
    const out = path.join(dir, 'v1.json');
    expect((await cellctl('mapping', 'init', '--out', out, '--config', path.join(dir, 'cells.config.ts'), '--endpoints', endpoints)).code).toBe(0);
    expect((JSON.parse(fs.readFileSync(out, 'utf8')) as MappingDocument).cells.zero.endpoint).toBe('http://127.0.0.1:8080');
  });
});
