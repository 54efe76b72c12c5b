import { until } from './cells';
import { startTestPostgres, TestPostgres, testClient, testPool } from './postgres';

describe('test clients and pools when a test stops the server', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startTestPostgres();
  });
  afterAll(async () => {
    await pg?.destroy();
  });

  it("an idle client and a pool's idle connection take the shutdown's 57P01 without failing the run; the client's next query still fails", async () => {
    const { host, port, user, password } = pg.server;
    const config = { host, port, user, password, database: await pg.database('shutdown') };
    const client = await testClient(config);
    const pool = testPool({ ...config, max: 1 });
    await pool.query('select 1');
    expect(pool.idleCount).toBe(1);
    await pg.server.stop();
    try {
      // Unlistened, the 57P01 each connection gets would be thrown as an uncaught exception here.
      await until('the pool to drop its lost connection', async () => pool.totalCount === 0, 60_000);
      await expect(client.query('select 1')).rejects.toThrow();
    } finally {
      await pg.server.start();
      await client.end();
      await pool.end();
    }
  });
});
