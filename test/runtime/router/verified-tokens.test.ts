import { generateKeyPairSync, KeyObject, sign } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { PartitionKeySource, resolveFleet } from '../../../lib/domain/fleet';
import { initialMapping, lookup } from '../../../lib/domain/mapping';
import { LocalRouter, RuntimeApi, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, startCell } from '../../support/cells';
import { validInput } from '../../support/fleet';

const NOW = { now: '2026-11-29T16:00:00.000Z' };
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** A JWT with `payload`, its header saying `alg`, signed by `key` (RS256 with an RSA key, ES256 with a P-256 one). */
function token(payload: Record<string, unknown>, key: KeyObject | undefined, alg = 'RS256'): string {
  const unsigned = `${b64({ alg, typ: 'JWT' })}.${b64(payload)}`;
  if (!key) return `${unsigned}.`;
  const signature = sign('sha256', Buffer.from(unsigned), alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key);
  return `${unsigned}.${signature.toString('base64url')}`;
}

function get(port: number, headers: http.OutgoingHttpHeaders): Promise<{ status: number; cell?: string; body: string; authenticate?: string }> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/orders', headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          cell: res.headers['x-cell'] as string | undefined,
          body,
          authenticate: res.headers['www-authenticate'] as string,
        }),
      );
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/**
 * A verified tenant identity (partitionKey.source 'jwt'): the router takes the tenant from a token the
 * fleet's issuer signed, so a client cannot spend another tenant's share by sending its key. A
 * forged, expired, unsigned or missing token gets 401 and is counted against nobody.
 */
describe.each([
  ['RS256', () => generateKeyPairSync('rsa', { modulusLength: 2048 })],
  ['ES256', () => generateKeyPairSync('ec', { namedCurve: 'P-256' })],
] as const)('the router verifying %s tenant tokens (real HAProxy)', (alg, keyPair) => {
  const issuer = keyPair();
  const next = keyPair();
  const stranger = keyPair();
  const exp = Math.floor(Date.parse('2100-01-01T00:00:00Z') / 1000);
  let router: LocalRouter;
  let port: number;
  let cells: FakeCell[];
  let doc: ReturnType<typeof initialMapping>;
  let dir: string;

  beforeAll(async () => {
    cells = await Promise.all(['cell-a', 'cell-b'].map((name) => startCell(name)));
    doc = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      16384,
      NOW,
    );
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-jwt-'));
    fs.writeFileSync(path.join(dir, 'mapping.json'), JSON.stringify(doc));
    const partitionKey: PartitionKeySource = {
      source: 'jwt',
      claim: 'tenant',
      algorithm: alg,
      // The issuer's key and the next one (a rotation under way).
      publicKeys: [issuer, next].map((k) => k.publicKey.export({ type: 'spki', format: 'pem' }) as string),
    };
    router = await onFreePorts(1, async ([p]) => {
      port = p;
      return startLocalRouter({
        mappingFile: path.join(dir, 'mapping.json'),
        port,
        debugHeaders: true,
        partitionKey,
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
        tenantMaxConn: 50,
      });
    });
  });
  afterAll(async () => {
    await router?.stop();
    await Promise.all(cells.map((c) => c.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("routes by the verified claim, signed by either of the fleet's keys, and hands the cell that tenant, whatever header the client sent", async () => {
    for (const [i, key] of [issuer, next].entries()) {
      const tenant = `acme-${i}`;
      const answer = await get(port, { authorization: `Bearer ${token({ tenant, exp }, key.privateKey, alg)}`, 'x-tenant-id': 'victim-1' });
      expect([tenant, answer.status, answer.cell]).toEqual([tenant, 200, lookup(doc, tenant).cell]);
      const cell = cells.find((c) => c.name === answer.cell)!;
      expect(cell.lastHeaders?.['x-tenant-id']).toBe(tenant);
    }
  });

  it('answers 401, with what is wrong, to a forged, an expired, an unsigned and a missing token, and counts them against nobody', async () => {
    const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
    const cases: [string, http.OutgoingHttpHeaders, string][] = [
      ['forged', { authorization: `Bearer ${token({ tenant: 'victim-1', exp }, stranger.privateKey, alg)}` }, 'invalid token'],
      ['expired', { authorization: `Bearer ${token({ tenant: 'victim-1', exp: 1_000_000 }, issuer.privateKey, alg)}` }, 'expired token'],
      ['no exp', { authorization: `Bearer ${token({ tenant: 'victim-1' }, issuer.privateKey, alg)}` }, 'expired token'],
      ['unsigned (alg none)', { authorization: `Bearer ${token({ tenant: 'victim-1', exp }, undefined, 'none')}` }, 'invalid token'],
      [
        'another algorithm',
        { authorization: `Bearer ${token({ tenant: 'victim-1', exp }, issuer.privateKey, alg === 'RS256' ? 'RS512' : 'ES384')}` },
        'invalid token',
      ],
      ['missing', { 'x-tenant-id': 'victim-1' }, 'missing token'],
      ['not a bearer', { authorization: 'Basic dmljdGltOnB3' }, 'missing token'],
    ];
    const before = cells.reduce((n, c) => n + c.requests, 0);
    for (const [name, headers, error] of cases) {
      const answer = await get(port, headers);
      expect([name, answer.status, JSON.parse(answer.body).error, answer.authenticate]).toEqual([name, 401, error, 'Bearer realm="cells"']);
    }
    expect(cells.reduce((n, c) => n + c.requests, 0)).toBe(before);
    // No tenant entry for the victim: nothing was counted against it.
    expect(await api.send('show table keys key victim-1')).not.toContain('key=victim-1');
  });

  it('is refused at load, one line each, with a key of the wrong type or not a public key', () => {
    const pem = (k: { publicKey: KeyObject }) => k.publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const other = alg === 'RS256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
    const load =
      (publicKeys: string[], claim = 'tenant') =>
      () =>
        resolveFleet({ ...validInput(), partitionKey: { source: 'jwt', claim, algorithm: alg, publicKeys } });
    expect(load([pem(issuer)])).not.toThrow();
    expect(load([pem(other)])).toThrow(
      `partitionKey.publicKeys[0]: an ${other.publicKey.asymmetricKeyType} key, but ${alg} tokens are verified with`,
    );
    expect(load(['-----BEGIN PRIVATE KEY-----'])).toThrow('partitionKey.publicKeys[0]: not a PEM public key');
    expect(load([])).toThrow('partitionKey.publicKeys: give 1 to 4 PEM public keys');
    expect(load([pem(issuer)], "ten'ant")).toThrow("partitionKey.claim: `ten'ant` is not a claim name the router can read");
  });
});
