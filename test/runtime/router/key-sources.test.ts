import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { PartitionKeySource } from '../../../lib/domain/fleet';
import { initialMapping, lookup } from '../../../lib/domain/mapping';
import { startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, startCell } from '../../support/cells';

const NOW = { now: '2026-11-29T16:00:00.000Z' };

/** GET through the router with a path and Host header of our choosing; returns status and x-cell. */
function get(port: number, urlPath: string, host: string): Promise<{ status: number; cell?: string }> {
  return answer(port, urlPath, host).then(({ status, cell }) => ({ status, cell }));
}

function answer(port: number, urlPath: string, host: string): Promise<{ status: number; cell?: string; body: string }> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode!, cell: res.headers['x-cell'] as string | undefined, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

describe.each([
  ['a path segment', { source: 'path', segment: 2 } as PartitionKeySource, (key: string) => ({ path: `/v1/${key}/orders`, host: 'api.example.com' })],
  ['a host label', { source: 'host', label: 1 } as PartitionKeySource, (key: string) => ({ path: '/orders', host: `${key}.api.example.com:8443` })],
])('the router reading the key from %s (real HAProxy)', (_name, partitionKey, request) => {
  it('routes like the TypeScript lookup and rejects a missing key with 400', async () => {
    const cells = await Promise.all(['cell-a', 'cell-b', 'cell-c'].map((name) => startCell(name)));
    const doc = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      16384,
      NOW,
    );
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keysrc-')), 'mapping.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    let port = 0;
    const router = await onFreePorts(1, async (ports) => {
      [port] = ports;
      return startLocalRouter({
        mappingFile: file,
        port,
        debugHeaders: true,
        partitionKey,
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
      });
    });
    try {
      // Host labels are case-insensitive in DNS; keep keys lower-case so both layers see the same bytes.
      const keys = Array.from({ length: 200 }, (_, i) => `t${i}-x${(i * 7919) % 1000}`);
      for (const key of keys) {
        const { path: p, host } = request(key);
        expect([key, await get(port, p, host)]).toEqual([key, { status: 200, cell: lookup(doc, key).cell }]);
      }
      const missing =
        partitionKey.source === 'path' ? await answer(port, '/v1', 'api.example.com') : await answer(port, '/orders', '.api.example.com');
      // The body says where this fleet's key goes.
      const place =
        partitionKey.source === 'path'
          ? 'as path segment 2 (counting from 1 after the leading /)'
          : 'as the first label of the Host header (KEY.example.com)';
      expect([missing.status, JSON.parse(missing.body)]).toEqual([
        400,
        { error: 'missing partition key', message: `missing partition key: send it ${place}` },
      ]);
      // The cell's WAF rate rule keys on x-tenant-id: the router sets it to the key it routed by,
      // whatever the client sent in it.
      const key = keys[3];
      const { path: p, host } = request(key);
      const cell = cells.find((c) => c.name === lookup(doc, key).cell)!;
      await new Promise<void>((resolve) => {
        http
          .request({ host: '127.0.0.1', port, path: p, headers: { host, 'x-tenant-id': 'someone-else' }, agent: false }, (res) => {
            res.resume();
            res.on('end', resolve);
          })
          .end();
      });
      expect(cell.lastHeaders?.['x-tenant-id']).toBe(key);
      if (partitionKey.source === 'path') {
        // Dot segments and encoded separators: a normalizing cell would act for another tenant.
        const refused = [
          '/v1/a/../victim/orders',
          '/v1/a/%2e%2e/victim/orders',
          '/v1/a/%2E%2e/victim',
          '/v1/a/./orders',
          '/v1/a/..',
          '/v1/a%2fb/orders',
          '/v1/a/%2F../victim',
          '/v1/a%5c..%5cvictim/orders',
          '/v1/a/%5C',
          '/v1/a\\..\\victim',
        ];
        const requestsBefore = cells.reduce((n, c) => n + c.requests, 0);
        for (const bad of refused) expect([bad, (await get(port, bad, 'api.example.com')).status]).toEqual([bad, 400]);
        expect(cells.reduce((n, c) => n + c.requests, 0)).toBe(requestsBefore);
        // Dots inside a segment are fine.
        expect((await get(port, `/v1/${key}/file.v2..json`, 'api.example.com')).status).toBe(200);
      }
    } finally {
      await router.stop();
      await Promise.all(cells.map((c) => c.close()));
    }
  }, 180_000);
});
