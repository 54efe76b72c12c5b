import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ERROR_503, keyFetch, renderHaproxyConfig } from '../../lib/router';

const options = (dir: string) => ({
  bind: { address: '127.0.0.1', port: 18081 }, adminSocket: path.join(dir, 'admin.sock'), stateDir: dir,
  partitionKey: { source: 'header' as const, name: 'x-tenant-id' }, bucketCount: 16384, slots: 4, cellMaxConn: 50, healthCheckPath: '/health',
});

describe('renderHaproxyConfig', () => {
  it('is a configuration HAProxy accepts', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-cfg-'));
    for (const f of ['exact.map', 'prefix.map', 'buckets.map', 'cells.map', 'meta.map']) fs.writeFileSync(path.join(dir, f), '');
    fs.writeFileSync(path.join(dir, '503.http'), ERROR_503);
    const file = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(file, renderHaproxyConfig({ ...options(dir), debugHeaders: true, statsPort: 18082 }));
    const check = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
    expect([check.status, check.stderr]).toEqual([0, expect.any(String)]);
  });

  it('computes the DESIGN.md bucket and looks up exact, then prefix, then bucket', () => {
    const config = renderHaproxyConfig(options('/state'));
    const lines = config.split('\n').map((l) => l.trim());
    const at = (s: string) => lines.findIndex((l) => l.includes(s));
    expect(config).toContain('sha2(256),bytes(0,4),hex,hex2i,and(16383)');
    expect(at('map_str(/state/exact.map)')).toBeLessThan(at('map_beg(/state/prefix.map)'));
    expect(at('map_beg(/state/prefix.map)')).toBeLessThan(at('map(/state/buckets.map)'));
  });

  it('never retries or redispatches, bounds every cell queue and answers 503 with Retry-After', () => {
    const config = renderHaproxyConfig(options('/state'));
    expect(config).toContain('retries 0');
    expect(config).not.toContain('redispatch');
    expect(config).toContain('timeout queue 1000ms');
    expect(config.match(/maxconn 50/g)).toHaveLength(4);
    expect(ERROR_503).toMatch(/^HTTP\/1.1 503[\s\S]*retry-after: 1[\s\S]*\{"error"/);
  });

  it('adds debug headers only when enabled', () => {
    expect(renderHaproxyConfig(options('/s'))).not.toContain('x-cell %[');
    expect(renderHaproxyConfig({ ...options('/s'), debugHeaders: true })).toContain('set-header x-cell %[var(txn.cell)]');
  });

  it('extracts the key from a header, a path segment or a host label', () => {
    expect(keyFetch({ source: 'header', name: 'x-tenant-id' })).toBe('req.hdr(x-tenant-id)');
    expect(keyFetch({ source: 'path', segment: 1 })).toBe('path,field(2,/)');
    expect(keyFetch({ source: 'host', label: 1 })).toBe('req.hdr(host),field(1,:),field(1,.)');
  });
});
