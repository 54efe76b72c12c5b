import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { pidRunning, watchChild } from '../../domain/files';

/** Where Debian's `postgresql` package puts the server binaries; PG_BIN overrides it. */
export const DEFAULT_PG_BIN = '/usr/lib/postgresql/15/bin';
export const POSTGRES_INSTALL_HINT =
  'install it with `apt-get install -y postgresql` (Debian/Ubuntu; binaries in /usr/lib/postgresql/<version>/bin) or set PG_BIN to the directory holding initdb and postgres';

/** The directory holding `initdb` and `postgres`: PG_BIN, else the newest /usr/lib/postgresql/<n>/bin. */
export function postgresBinDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = env.PG_BIN ? [env.PG_BIN] : [DEFAULT_PG_BIN, ...listVersions('/usr/lib/postgresql')];
  return candidates.find((dir) => fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'postgres')));
}

function listVersions(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => path.join(root, v, 'bin'));
}

export interface PostgresServerOptions {
  /** The data directory; created with initdb when it holds no cluster yet. */
  readonly dataDir: string;
  /** Port on 127.0.0.1. @default a free port */
  readonly port?: number;
  /** Superuser created by initdb. @default 'cell_admin' */
  readonly user?: string;
  /** Its password (scram-sha-256 over TCP). @default 'local-only' */
  readonly password?: string;
  /** Databases created at start when missing. */
  readonly databases?: readonly string[];
  /** Server log lines. */
  readonly log?: (line: string) => void;
  readonly binDir?: string;
}

export interface PostgresConnection {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
}

/**
 * A real PostgreSQL server on loopback (one cluster: its own data directory and postmaster).
 * `stop()` and `start()` can be called again: tests and the blast-radius script stop a cell's
 * database and bring it back on the same port with its data.
 */
export interface PostgresServer extends PostgresConnection {
  readonly dataDir: string;
  /** `postgres://user:password@127.0.0.1:port/<database>` */
  url(database: string): string;
  /** Starts the postmaster (after `stop()`); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Fast shutdown (SIGINT: open sessions are cut, no waiting for clients). */
  stop(): Promise<void>;
  readonly running: boolean;
  /** The postmaster's pid while it runs. */
  readonly pid: number | undefined;
  /**
   * Runs this server at CPU priority `nice` (-20…19, higher is lower; raising it needs no privilege):
   * the postmaster and every process it has started now, and every server process after a restart
   * (backends and workers fork from the postmaster and inherit it). The blast-radius script gives a
   * faulty cell's database its own machine this way, as far as one machine can.
   */
  setPriority(nice: number): void;
}

/** The processes whose parent is `pid` (Linux: from /proc). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the command name, which may hold spaces and parentheses: state, ppid, …
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // It exited meanwhile.
    }
  }
  return out;
}

/** `os.setPriority` on `pid` and its children, ignoring processes that exited meanwhile. */
export function setTreePriority(pid: number, nice: number): void {
  for (const p of [pid, ...childPids(pid)]) {
    try {
      os.setPriority(p, nice);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH' && pidRunning(p)) throw error;
    }
  }
}

/** A free TCP port on loopback (bound and released; the caller binds it soon after). */
export async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Throws one line when something already listens on 127.0.0.1:`port`: checked before anything is
 * started, so a second fleet or router on a busy port is refused at once (HAProxy binds with
 * `noreuseport`, so it would fail too, but only after the cells had started).
 */
export async function assertPortFree(port: number, what: string): Promise<void> {
  const server = net.createServer();
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once('error', resolve).listen(port, '127.0.0.1', () => resolve(undefined));
  });
  if (!error) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return;
  }
  if (error.code === 'EADDRINUSE')
    throw new Error(
      `port ${port} is already in use on 127.0.0.1 (another \`cellctl fleet local\` or router?); stop what listens there or pick another ${what}`,
    );
  throw new Error(`port ${port} on 127.0.0.1: ${error.message}`);
}

/**
 * PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user
 * (created by the Debian package), which then owns the data directory.
 */
function runAs(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const passwd = spawnSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' });
  const fields = passwd.stdout?.trim().split(':');
  if (passwd.status !== 0 || !fields || fields.length < 4) {
    throw new Error(
      'running as root and there is no `postgres` user to run PostgreSQL as (PostgreSQL refuses root); create one (`useradd -r postgres`) or run as a normal user',
    );
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/**
 * The server's user must reach its data directory: give traverse-only access (o+x, no listing) on
 * every parent that lacks it (a 0700 temp folder, a project under /root).
 */
function allowTraverse(dir: string): void {
  for (let parent = dir; parent !== path.dirname(parent); parent = path.dirname(parent)) {
    if (!fs.existsSync(parent)) continue;
    const mode = fs.statSync(parent).mode;
    if ((mode & 0o001) === 0) fs.chmodSync(parent, (mode & 0o7777) | 0o001);
  }
}

function chownTree(dir: string, owner: { uid: number; gid: number }): void {
  fs.chownSync(dir, owner.uid, owner.gid);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(full, owner);
    else fs.chownSync(full, owner.uid, owner.gid);
  }
}

function initCluster(binDir: string, dataDir: string, user: string, password: string, owner?: { uid: number; gid: number }): void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const pwfile = path.join(path.dirname(path.resolve(dataDir)), `.${path.basename(dataDir)}.pw`);
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (owner) {
      fs.chownSync(dataDir, owner.uid, owner.gid);
      fs.chownSync(pwfile, owner.uid, owner.gid);
    }
    const result = spawnSync(
      path.join(binDir, 'initdb'),
      ['-D', dataDir, '-U', user, `--pwfile=${pwfile}`, '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
      { encoding: 'utf8', ...(owner ?? {}) },
    );
    if (result.status !== 0) throw new Error(`initdb ${dataDir} failed: ${(result.stderr || result.stdout || String(result.error)).trim()}`);
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
}

/** Starts (creating it on first use) a PostgreSQL cluster in `dataDir` on 127.0.0.1. */
export async function startPostgresServer(o: PostgresServerOptions): Promise<PostgresServer> {
  const binDir = o.binDir ?? postgresBinDir();
  if (!binDir) throw new Error(`PostgreSQL server binaries not found; ${POSTGRES_INSTALL_HINT}`);
  const user = o.user ?? 'cell_admin';
  const password = o.password ?? 'local-only';
  const owner = runAs();
  const dataDir = path.resolve(o.dataDir);
  if (owner) allowTraverse(path.dirname(dataDir));
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    initCluster(binDir, dataDir, user, password, owner);
  } else if (owner) {
    chownTree(dataDir, owner);
  }
  const port = o.port ?? (await freeLoopbackPort());
  let child: ChildProcess | undefined;
  let nice: number | undefined;
  const log = o.log ?? (() => undefined);

  const connect = async (database: string) => {
    const client = new Client({ host: '127.0.0.1', port, user, password, database, connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };

  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    // A postmaster killed without cleanup leaves its pid file; the new one refuses to start over it.
    const pidFile = path.join(dataDir, 'postmaster.pid');
    if (fs.existsSync(pidFile)) {
      const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (pidRunning(pid)) throw new Error(`${dataDir} is in use by a running postgres (pid ${pid}); stop it first (kill -INT ${pid})`);
      fs.rmSync(pidFile, { force: true });
    }
    const proc = spawn(
      path.join(binDir, 'postgres'),
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        // A throwaway, loopback-only server: durability traded for speed on a shared machine.
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'shared_buffers=16MB',
        '-c',
        'max_connections=60',
        '-c',
        'logging_collector=off',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], ...(owner ?? {}) },
    );
    // Before it forks anything: every server process inherits the postmaster's priority.
    if (nice !== undefined && proc.pid !== undefined) setTreePriority(proc.pid, nice);
    // A fast shutdown (SIGINT) of this server if the process that started it dies without stopping it
    // (a SIGKILLed `cellctl fleet local`, a crashed test): no postmaster outlives its owner.
    watchChild(proc, { signal: 'INT', killAfterMs: 30_000 });
    let output = '';
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.length > 20_000) output = output.slice(-10_000);
      for (const line of d.toString().split('\n')) if (line.trim()) log(line);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    child = proc;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`postgres on port ${port} exited at start:\n${output.trim()}`);
      try {
        const client = await connect('postgres');
        await client.end();
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`postgres on port ${port} did not accept connections within 30 s:\n${output.trim()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    for (const database of o.databases ?? []) {
      const client = await connect('postgres');
      try {
        const exists = await client.query('select 1 from pg_database where datname = $1', [database]);
        if (exists.rowCount === 0) await client.query(`create database "${database.replace(/"/g, '""')}"`);
      } finally {
        await client.end();
      }
    }
  };

  const stop = async () => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGINT');
    });
  };

  await start();
  return {
    host: '127.0.0.1',
    port,
    user,
    password,
    dataDir,
    url: (database) => `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    start,
    stop,
    get running() {
      return !!child && child.exitCode === null && child.signalCode === null;
    },
    get pid() {
      return child && child.exitCode === null ? child.pid : undefined;
    },
    setPriority: (value) => {
      nice = value;
      if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) setTreePriority(child.pid, value);
    },
  };
}

/** A temp directory the server's user can write into (under os.tmpdir()). */
export function makeTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}
