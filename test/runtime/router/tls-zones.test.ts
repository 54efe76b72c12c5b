import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as https from 'https';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, routed, until, untilCellChecked } from '../../support/cells';

const NOW = { now: '2026-11-29T16:00:00.000Z' };

/** A CA and a server certificate for `host`, made with the openssl CLI in `dir`. */
function makeCertificates(dir: string, host: string): { ca: string; key: string; cert: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=test cells CA');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'cell.key', '-out', 'cell.csr', '-subj', `/CN=${host}`);
  fs.writeFileSync(path.join(dir, 'ext.cnf'), `subjectAltName=DNS:${host}\n`);
  run(
    'x509',
    '-req',
    '-in',
    'cell.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'cell.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  return { ca: path.join(dir, 'ca.pem'), key: path.join(dir, 'cell.key'), cert: path.join(dir, 'cell.pem') };
}

describe('TLS to cells (certificate verified against a CA file and the endpoint host)', () => {
  let dir: string;
  let router: LocalRouter;
  let port: number;
  let doc: MappingDocument;
  const servers: (http.Server | https.Server)[] = [];
  const agent = new http.Agent({ keepAlive: false });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-tls-'));
    const tls = makeCertificates(dir, 'cell-tls.test');
    const listen = async (server: http.Server | https.Server) => {
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return (server.address() as AddressInfo).port;
    };
    const answer = (name: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { 'x-served-by': name });
      res.end(`${name}:${(req.socket as { servername?: string }).servername ?? ''}`);
    };
    const tlsPort = await listen(https.createServer({ key: fs.readFileSync(tls.key), cert: fs.readFileSync(tls.cert) }, answer('tls')));
    const plainPort = await listen(http.createServer(answer('plain')));
    // The endpoint says wrong-name.test, the certificate names cell-tls.test: must be refused.
    doc = initialMapping(
      [
        { id: 'tls', endpoint: `https://cell-tls.test:${tlsPort}`, state: 'active' as const },
        { id: 'plain', endpoint: `http://127.0.0.1:${plainPort}`, state: 'active' as const },
        { id: 'wrong-name', endpoint: `https://wrong-name.test:${tlsPort}`, state: 'active' as const },
      ],
      16384,
      NOW,
    );
    doc = pinKey(pinKey(pinKey(doc, 'to-tls', 'tls', NOW), 'to-plain', 'plain', NOW), 'to-wrong', 'wrong-name', NOW);
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
        caFile: tls.ca,
        resolve: async () => ['127.0.0.1'],
      });
    });
  }, 120_000);
  afterAll(async () => {
    agent.destroy();
    await router.stop();
    servers.forEach((s) => s.close());
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reaches an https:// cell over TLS, sending the endpoint host as SNI, and a plain cell in cleartext', async () => {
    const viaTls = await routed(agent, port, 'to-tls');
    expect([viaTls.status, viaTls.body]).toEqual([200, 'tls:cell-tls.test']);
    expect((await routed(agent, port, 'to-plain')).body).toBe('plain:');
  });

  it('refuses a cell whose certificate does not name the endpoint host (503, never served)', async () => {
    const answer = await routed(agent, port, 'to-wrong');
    expect(answer.status).toBe(503);
    expect(answer.body).not.toContain('tls:');
  });
});

describe('zones: one server per zonal address of a cell endpoint, spread by weight', () => {
  let router: LocalRouter;
  let port: number;
  let dir: string;
  const zones = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
  let resolved = [...zones];
  const servers = new Map<string, http.Server>();
  const seen: string[] = [];
  let holdMs = 0;

  beforeAll(async () => {
    let cellPort = 0;
    for (const address of zones) {
      const server = http.createServer((req, res) => {
        if (req.url === '/health') {
          res.end('ok');
          return;
        }
        seen.push(address);
        setTimeout(() => res.end(address), holdMs);
      });
      await new Promise<void>((resolve) => server.listen(cellPort, address, resolve));
      cellPort = (server.address() as AddressInfo).port;
      servers.set(address, server);
    }
    const doc = initialMapping([{ id: 'zonal', endpoint: `http://zonal-cell.test:${cellPort}`, state: 'active' as const }], 16384, NOW);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-zones-'));
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
        cellMaxConn: 6,
        zones: 3,
        localNetworks: ['127.0.0.3/32'],
        resolve: async () => resolved,
        refreshAddressesMs: 500,
      });
    });
  }, 120_000);
  afterAll(async () => {
    await router.stop();
    servers.forEach((s) => {
      s.closeAllConnections();
      s.close();
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("spreads a cell's new requests evenly over its zones (equal weights), and every zone takes its share of a burst (the cell's maxconn split)", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    seen.length = 0;
    for (let i = 0; i < 21; i++) expect((await routed(agent, port, `k-${i}`)).status).toBe(200);
    agent.destroy();
    // Round robin at equal weights: 7 each, one after the other.
    expect(zones.map((z) => seen.filter((s) => s === z).length)).toEqual([7, 7, 7]);
    // Six at once against 2 per zonal server: every zone takes its share.
    seen.length = 0;
    // Held long enough that all six are in flight together, even on a loaded machine.
    holdMs = 3000;
    const wide = new http.Agent({ keepAlive: false });
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => routed(wide, port, `w-${i}`)));
    holdMs = 0;
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(new Set(seen)).toEqual(new Set(zones));
  });

  it('keeps serving the cell when the own zone fails, and follows the endpoint when a zone leaves it', async () => {
    const own = servers.get('127.0.0.3')!;
    own.closeAllConnections();
    await new Promise<void>((resolve) => own.close(() => resolve()));
    await untilCellChecked(router, 'zonal', 'DOWN', '127.0.0.3'); // two failed checks at 1 s
    const agent = new http.Agent({ keepAlive: false });
    seen.length = 0;
    for (let i = 0; i < 10; i++) expect((await routed(agent, port, `f-${i}`)).status).toBe(200);
    expect(seen.every((a) => a !== '127.0.0.3')).toBe(true);
    // The endpoint loses 127.0.0.4: after the next re-resolution nothing goes there.
    resolved = ['127.0.0.2', '127.0.0.3'];
    await until(
      'the zonal servers to follow DNS',
      async () => {
        seen.length = 0;
        holdMs = 200;
        await Promise.all(Array.from({ length: 4 }, (_, i) => routed(agent, port, `d-${i}`)));
        holdMs = 0;
        return !seen.includes('127.0.0.4');
      },
      60_000,
    );
    agent.destroy();
  }, 120_000);
});
