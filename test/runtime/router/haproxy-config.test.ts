import { spawn, spawnSync } from 'child_process';
import * as http from 'http';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { bucketNetworks, ERROR_503, keyFetch, keyPlace, renderHaproxyConfig, routerStateFiles } from '../../../lib/runtime/router';
import { freePorts, routed, until } from '../../support/cells';
import { healthCheckGet } from '../../support/nlb';

const options = (dir: string) => ({
  bind: { address: '127.0.0.1', port: 18081 },
  adminSocket: path.join(dir, 'admin.sock'),
  stateDir: dir,
  partitionKey: { source: 'header' as const, name: 'x-tenant-id' },
  bucketCount: 16384,
  slots: 4,
  cellMaxConn: 50,
  healthCheckPath: '/health',
});

describe('renderHaproxyConfig', () => {
  it('behind the NLB, readiness answers health checks that carry the PROXY v2 header (the NLB sends it on health checks too)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-ready-'));
    const [port, readyPort] = await freePorts(2);
    const config = renderHaproxyConfig({
      ...options(dir),
      bind: { address: '127.0.0.1', port },
      acceptProxy: true,
      readyBind: { address: '127.0.0.1', port: readyPort },
    });
    // The files a router task starts from (the image's), maps and readiness map included.
    for (const [name, content] of Object.entries(routerStateFiles(config))) fs.writeFileSync(path.join(dir, name), content);
    const file = path.join(dir, 'haproxy.cfg');
    const haproxy = spawn('haproxy', ['-f', file, '-db'], { stdio: 'ignore' });
    try {
      let answer: { status: number; body: string } | undefined;
      await until(
        'readiness to answer a PROXY v2 health check',
        async () => {
          answer = await healthCheckGet(readyPort, '/ready', { proxy: true, timeoutMs: 2000 });
          return true;
        },
        60_000,
      );
      // An answer, not a 400: 503 until a mapping is in force (what the NLB counts as unhealthy).
      expect(answer!.status).toBe(503);
      expect(JSON.parse(answer!.body)).toMatchObject({ ready: false, reason: 'no mapping in force' });
      // Without the header the connection is refused as a protocol error: never a 200.
      const plain = await healthCheckGet(readyPort, '/ready', { proxy: false, timeoutMs: 2000 }).catch((e: Error) => ({
        status: 0,
        body: e.message,
      }));
      expect(plain.status).not.toBe(200);
      expect(plain.status).not.toBe(503);
    } finally {
      haproxy.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is a configuration HAProxy accepts, and answers 503 until a mapping is loaded', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-cfg-'));
    const [port, statsPort] = await freePorts(2);
    const config = renderHaproxyConfig({ ...options(dir), bind: { address: '127.0.0.1', port }, debugHeaders: true, statsPort });
    for (const [name, content] of Object.entries(routerStateFiles(config))) fs.writeFileSync(path.join(dir, name), content);
    const file = path.join(dir, 'haproxy.cfg');
    const check = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
    expect([check.status, check.stderr]).toEqual([0, expect.any(String)]);
    const haproxy = spawn('haproxy', ['-f', file, '-db'], { stdio: 'ignore' });
    const agent = new http.Agent({ keepAlive: false });
    try {
      let answer = await routed(agent, port, 'tenant-1');
      for (const deadline = Date.now() + 60_000; answer.status === 0 && Date.now() < deadline;) {
        // 0: not listening yet
        await new Promise((r) => setTimeout(r, 100));
        answer = await routed(agent, port, 'tenant-1');
      }
      // Marked as the router's own answer: a lane client tries its shard's other lane (docs/lanes.md).
      expect(answer).toMatchObject({ status: 503, retryAfter: '5', cell: undefined, routerError: 'no-mapping' });
      expect(JSON.parse(answer.body)).toEqual({ error: 'no mapping loaded' });
      const missing = await routed(agent, port, undefined);
      expect([missing.status, JSON.parse(missing.body)]).toEqual([
        400,
        { error: 'missing partition key', message: 'missing partition key: send it in the x-tenant-id header' },
      ]);
      const invalid = await routed(agent, port, 'bad key');
      expect([invalid.status, JSON.parse(invalid.body)]).toEqual([
        400,
        {
          error: 'invalid partition key',
          message:
            'invalid partition key: send one key in the x-tenant-id header, 1 to 128 characters from A-Z a-z 0-9 . _ : @ -, starting with a letter or digit',
        },
      ]);
    } finally {
      haproxy.kill('SIGKILL');
    }
  });

  it('checks the key, then computes the DESIGN.md bucket and looks up exact, then prefix, then bucket', () => {
    const config = renderHaproxyConfig(options('/state'));
    const lines = config.split('\n').map((l) => l.trim());
    const at = (s: string) => lines.findIndex((l) => l.includes(s));
    expect(config).toContain('sha2(256),bytes(0,4),hex,hex2i,and(16383)');
    // Every rule reads the key from its capture, one byte longer than a valid key.
    expect(at('capture request header x-tenant-id len 129')).toBeGreaterThan(at('frontend router'));
    expect(config).not.toMatch(/ req\.fhdr\(x-tenant-id\)/);
    // The bucket is kept per tenant (gpt0 of its keys-table entry), set once the whole key passed the check.
    expect(at('http-request track-sc0 capture.req.hdr(0) table keys')).toBeGreaterThan(at('frontend router'));
    expect(
      at(
        'http-request sc-set-gpt0(0) capture.req.hdr(0),sha2(256),bytes(0,4),hex,hex2i,and(16383),add(1) if { sc0_get_gpt0 eq 0 } { capture.req.hdr(0) -m reg',
      ),
    ).toBeGreaterThan(at('http-request track-sc0'));
    expect(at('use_backend bad_key if !{ sc0_get_gpt0 gt 0 } !{ capture.req.hdr(0) -m reg')).toBeGreaterThan(at('sc-set-gpt0'));
    // The slot is looked up once, into txn.slot (the per-cell counts need it before routing); the
    // bad-key backend is chosen first (HAProxy evaluates use_backend in order, after every rule).
    expect(at('map_str(/state/exact.map)')).toBeLessThan(at('map_beg(/state/prefix.map)'));
    expect(at('map_beg(/state/prefix.map)')).toBeLessThan(at('map_ip(/state/buckets.map)'));
    expect(at('use_backend bad_key')).toBeGreaterThan(at('map_ip(/state/buckets.map)'));
    expect(at('use_backend %[var(txn.slot)] if { var(txn.slot) -m found }')).toBeGreaterThan(at('use_backend bad_key'));
    expect(at('use_backend %[var(txn.slot)]')).toBeLessThan(at('default_backend no_mapping'));
  });

  it('keeps more tenants than the frontend has connections, so every valid key gets an entry to hold its bucket', () => {
    expect(renderHaproxyConfig({ ...options('/s'), maxConn: 4000, keyCacheEntries: 4001 })).toContain('stick-table type string len 129 size 4001 ');
    expect(() => renderHaproxyConfig({ ...options('/s'), maxConn: 4000, keyCacheEntries: 4000 })).toThrow(
      /^keyCacheEntries 4000 must be a whole number above maxConn \(4000\): every request in flight holds its tenant's entry/,
    );
    // No rule routes a key without an entry: the bucket always comes from the entry.
    expect(renderHaproxyConfig(options('/s'))).not.toContain('sc0_tracked');
  });

  it('writes a bucket range as the fewest IPv4 networks that cover exactly that range', () => {
    expect(bucketNetworks(0, 16383)).toEqual(['0.0.0.0/18']);
    expect(bucketNetworks(0, 8191)).toEqual(['0.0.0.0/19']);
    expect(bucketNetworks(5, 5)).toEqual(['0.0.0.5/32']);
    expect(bucketNetworks(1, 6)).toEqual(['0.0.0.1/32', '0.0.0.2/31', '0.0.0.4/31', '0.0.0.6/32']);
    expect(bucketNetworks(0, 2 ** 20 - 1)).toEqual(['0.0.0.0/12']);
    // Every bucket of a random range is covered exactly once, none outside it.
    const toInt = (ip: string) => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
    for (const [from, to] of [
      [3, 1000],
      [4095, 4097],
      [12345, 65535],
    ]) {
      const covered: number[] = [];
      for (const net of bucketNetworks(from, to)) {
        const [ip, bits] = net.split('/');
        for (let b = toInt(ip); b < toInt(ip) + 2 ** (32 - Number(bits)); b++) covered.push(b);
      }
      expect(covered).toEqual(Array.from({ length: to - from + 1 }, (_, i) => from + i));
    }
  });

  it('never retries or redispatches, bounds every cell queue and answers 503 with Retry-After', () => {
    const config = renderHaproxyConfig(options('/state'));
    expect(config).toContain('retries 0');
    expect(config).not.toContain('redispatch');
    expect(config).toContain('timeout queue 1000ms');
    // The cell's 50 split over its three zonal servers.
    expect(config.match(/default-server .* maxconn 17 weight 100$/gm)).toHaveLength(4);
    expect(config.match(/^ {2}server z[0-2] 127\.0\.0\.1:1 disabled no-ssl$/gm)).toHaveLength(12);
    expect(ERROR_503).toMatch(/^HTTP\/1.1 503[\s\S]*retry-after: 1[\s\S]*\{"error"/);
  });

  it('adds debug headers only when enabled', () => {
    expect(renderHaproxyConfig(options('/s'))).not.toContain('x-cell %[');
    expect(renderHaproxyConfig({ ...options('/s'), debugHeaders: true })).toContain('set-header x-cell %[be_name,map(/s/cells.map)]');
  });

  it('extracts the key from a header, a path segment or a host label', () => {
    expect(keyFetch({ source: 'header', name: 'x-tenant-id' })).toBe('req.fhdr(x-tenant-id)');
    expect(keyFetch({ source: 'path', segment: 1 })).toBe('path,field(2,/)');
    expect(keyFetch({ source: 'host', label: 1 })).toBe('req.fhdr(host),field(1,:),field(1,.)');
  });

  it("names the fleet's key place in the bad-key 400 bodies, rendered once in the bad_key backend", () => {
    expect(keyPlace({ source: 'header', name: 'x-org' })).toBe('in the x-org header');
    expect(keyPlace({ source: 'path', segment: 1 })).toBe('as the first path segment (/KEY/...)');
    expect(keyPlace({ source: 'path', segment: 3 })).toBe('as path segment 3 (counting from 1 after the leading /)');
    expect(keyPlace({ source: 'host', label: 2 })).toBe('as label 2 of the Host header (counting from 1 at the left)');
    const config = renderHaproxyConfig({ ...options('/s'), partitionKey: { source: 'header', name: 'x-org' } });
    const badKey = config.slice(config.indexOf('\nbackend bad_key\n'), config.indexOf('\nbackend no_mapping\n'));
    expect(badKey).toContain(`string '{"error":"missing partition key","message":"missing partition key: send it in the x-org header"}' if `);
    expect(config.match(/send it in the x-org header/g)).toHaveLength(1);
  });
});
