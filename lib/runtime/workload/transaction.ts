import type { PoolClient } from 'pg';

/**
 * Runs `work` in one transaction on `client`: `begin <mode>` (`isolation level repeatable read read
 * only`, or '' for the default), commit when it returns, rollback when it throws (a rollback that
 * fails too, on a broken connection, leaves the first error to the caller).
 */
export async function inTransaction<T>(client: PoolClient, mode: string, work: () => Promise<T>): Promise<T> {
  await client.query(mode ? `begin ${mode}` : 'begin');
  try {
    const result = await work();
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}
