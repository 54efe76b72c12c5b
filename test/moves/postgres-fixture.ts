import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { CellDatabase } from '../../lib/moves/cell-data';

/**
 * A real PostgreSQL server for the move tests, listening on a Unix socket in a temp directory only
 * (no TCP port to collide with concurrent test runs). One database per cell.
 */
export interface PostgresServer {
  readonly socketDir: string;
  database(name: string): CellDatabase;
  createDatabase(name: string, schema?: string): Promise<CellDatabase>;
  stop(): Promise<void>;
}

const BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((d) => fs.existsSync(path.join(d, 'initdb')));

/** Contract 2's bookkeeping and two movable tables (uuid and bigint ids), as the workload's migrations create them. */
export const CONTRACT_SCHEMA = `
create sequence cf_row_version;
create table cf_schema_migrations (version int primary key, applied_at timestamptz not null default now());
insert into cf_schema_migrations (version) values (1);
create table cf_tombstones (table_name text not null, tenant_id text not null, id text not null, row_version bigint not null);
create index on cf_tombstones (row_version);
create table cf_moved_away (kind text not null check (kind in ('tenant', 'bucket')), value text not null, move_id text not null,
  moved_to text not null, at timestamptz not null default now(), primary key (kind, value));
create function cf_set_row_version() returns trigger language plpgsql as $$
begin new.row_version := nextval('cf_row_version'); return new; end $$;
create function cf_record_tombstone() returns trigger language plpgsql as $$
begin insert into cf_tombstones values (tg_table_name, old.tenant_id, old.id::text, nextval('cf_row_version')); return old; end $$;
create table items (id uuid primary key default gen_random_uuid(), tenant_id text not null, name text not null, body jsonb,
  created_at timestamptz not null default now(), row_version bigint not null default 0);
create index on items (tenant_id);
create trigger items_row_version before insert or update on items for each row execute function cf_set_row_version();
create trigger items_tombstone after delete on items for each row execute function cf_record_tombstone();
create table notes (id bigint primary key, tenant_id text not null, text text, row_version bigint not null default 0);
create trigger notes_row_version before insert or update on notes for each row execute function cf_set_row_version();
create trigger notes_tombstone after delete on notes for each row execute function cf_record_tombstone();
`;

export async function startPostgres(): Promise<PostgresServer> {
  if (!BIN) throw new Error('PostgreSQL server binaries not found: apt-get install -y postgresql');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'moves-pg-'));
  const data = path.join(dir, 'data');
  // PostgreSQL refuses to run as root: run it as the postgres user when we are root (CI).
  const asUser = process.getuid?.() === 0 ? (() => {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    fs.chownSync(dir, uid, gid);
    // The postgres user must reach the directory: give traverse-only (x) on this run's temp parents
    // (jest's per-run folder is created 0700).
    for (let parent = path.dirname(dir); parent !== path.dirname(parent); parent = path.dirname(parent)) {
      const mode = fs.statSync(parent).mode;
      if ((mode & 0o001) === 0) fs.chmodSync(parent, (mode & 0o7777) | 0o001);
    }
    return { uid, gid };
  })() : {};
  const init = spawnSync(path.join(BIN, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], { encoding: 'utf8', ...asUser });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.error}`);
  const server: ChildProcess = spawn(path.join(BIN, 'postgres'), ['-D', data, '-k', dir, '-c', "listen_addresses=", '-c', 'fsync=off', '-c', 'max_connections=50'], { stdio: ['ignore', 'ignore', 'pipe'], ...asUser });
  let log = '';
  server.stderr!.on('data', (d: Buffer) => { log += d.toString(); });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const client = new Client({ host: dir, port: 5432, user: 'postgres', database: 'postgres' });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => undefined);
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`postgres did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const database = (name: string): CellDatabase => ({ host: dir, port: 5432, database: name, user: 'postgres', password: '' });
  return {
    socketDir: dir,
    database,
    createDatabase: async (name, schema = CONTRACT_SCHEMA) => {
      const admin = new Client(database('postgres'));
      await admin.connect();
      await admin.query(`create database "${name}"`);
      await admin.end();
      const client = new Client(database(name));
      await client.connect();
      await client.query(schema);
      await client.end();
      return database(name);
    },
    stop: async () => {
      if (server.exitCode === null) {
        await new Promise<void>((resolve) => {
          server.once('exit', () => resolve());
          server.kill('SIGINT'); // fast shutdown
        });
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
