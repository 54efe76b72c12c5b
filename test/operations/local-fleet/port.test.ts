import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { assertPortFree, startLocalFleet } from '../../../lib/operations/local-fleet';

/** A second `cellctl fleet local` on a busy port is refused at once, before any cell or database starts. */
describe('a local fleet on a busy port', () => {
  let busy: net.Server;
  let port: number;
  beforeAll(async () => {
    busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    port = (busy.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

  it('is refused with one line, and nothing is started', async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'busy-port-'));
    await expect(startLocalFleet({ port, stateDir, cells: 1 })).rejects.toThrow(
      new RegExp(
        `^port ${port} is already in use on 127\\.0\\.0\\.1 \\(another \`cellctl fleet local\` or router\\?\\); stop what listens there or pick another --port$`,
      ),
    );
    expect(fs.readdirSync(stateDir)).toEqual([]);
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('says nothing of a free port', async () => {
    const free = net.createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const freePort = (free.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    await expect(assertPortFree(freePort, '--port')).resolves.toBeUndefined();
  });
});
