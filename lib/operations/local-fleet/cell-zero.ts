import { Pool } from 'pg';

/** How many tenants, and items each, the local existing service holds before the router stands in front of it. */
export interface ExistingData {
  /** @default 24 */
  readonly tenants?: number;
  /** @default 5 */
  readonly itemsPerTenant?: number;
}

/** The tenants the local existing service holds: `existing-1` … `existing-N`. */
export function existingTenants(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `existing-${i + 1}`);
}

/**
 * Turns the reference workload's freshly migrated database into one that predates the
 * movable-schema contract, as an existing service's does: no row versions (the sequence, its
 * trigger function and the items trigger go, every row keeps version 0) and no tombstones (the
 * table, its trigger function and the items trigger go). What the workload itself reads stays
 * (`cf_moved_away`, its fence; `cf_bucket`; the work queue). Then the existing tenants' items are
 * written straight into it, as years of traffic would have. `cellctl cell-zero check --sql` adds
 * back what this takes away.
 */
export async function makeExistingDatabase(url: string, data: ExistingData = {}): Promise<string[]> {
  const tenants = existingTenants(data.tenants ?? 24);
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    await pool.query(`
      drop trigger items_row_version on items;
      drop trigger items_tombstone on items;
      drop function cf_set_row_version();
      drop function cf_record_tombstone();
      drop table cf_tombstones;
      drop sequence cf_row_version;`);
    await pool.query(
      `
      insert into items (id, tenant_id, data, status, processed_at)
      select gen_random_uuid()::text, t.tenant, jsonb_build_object('n', n.n, 'seeded', true), 'processed', now()
      from unnest($1::text[]) as t(tenant), generate_series(1, $2::int) as n(n)`,
      [tenants, data.itemsPerTenant ?? 5],
    );
  } finally {
    await pool.end();
  }
  return tenants;
}
