import { MOTO_INSTALL_HINT, startMoto } from './moto';

describe('startMoto', () => {
  it('fails with the install hint on a machine without moto_server (the tests never skip)', async () => {
    await expect(startMoto({ command: 'moto_server-not-installed' })).rejects.toThrow(MOTO_INSTALL_HINT);
    expect(MOTO_INSTALL_HINT).toMatch(/pip install 'moto\[server\]==5\.2\.1'/);
  });

  it('starts one server on a free port, answers, and is gone after stop (by pid)', async () => {
    const moto = await startMoto();
    try {
      expect(moto.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${moto.endpoint}/moto-api/`)).status).toBe(200);
      await moto.reset();
    } finally {
      await moto.stop();
    }
    expect(() => process.kill(moto.pid, 0)).toThrow();
  });
});
