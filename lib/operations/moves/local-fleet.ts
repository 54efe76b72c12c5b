import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { pidRunning } from '../../domain/files';
import { DEFAULT_PARTITION_KEY } from '../../domain/fleet/defaults';
import { CellDatabase } from './cell-data';
import { MoveError } from '../../domain/moves/types';
import { VersionProbe } from './routing-control';

/** What `cellctl move --local` needs from the running local fleet's `fleet.json` (contract 4). */
export interface LocalFleetInfo {
  readonly stateDir: string;
  readonly mappingFile: string;
  /** Every local router; each must serve a new mapping version before the move goes on. */
  readonly routerUrls: readonly string[];
  /** The partition key header the routers read. @default x-tenant-id */
  readonly partitionHeader: string;
  readonly cells: Readonly<Record<string, CellDatabase>>;
  /** Cell zero's id (`cellctl fleet local --cell-zero`): the existing service, not a factory cell. */
  readonly cellZero?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function database(cell: string, value: unknown, file: string): CellDatabase {
  const where = `${file}: cells.${cell}.database`;
  if (typeof value === 'string') {
    const url = new URL(value);
    return {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: url.pathname.slice(1),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
    };
  }
  if (!isObject(value)) throw new MoveError(`${where}: missing (a postgres:// URL or {host, port, database, user, password})`);
  const db = {
    host: value.host,
    port: Number(value.port ?? 5432),
    database: value.database ?? value.name,
    user: value.user,
    password: value.password ?? '',
  };
  if (
    typeof db.host !== 'string' ||
    typeof db.database !== 'string' ||
    typeof db.user !== 'string' ||
    typeof db.password !== 'string' ||
    !Number.isInteger(db.port)
  ) {
    throw new MoveError(`${where}: needs host, port, database, user and password`);
  }
  return db as CellDatabase;
}

/**
 * Reads `<stateDir>/fleet.json`, written by `cellctl fleet local` while it runs. Relative paths in it
 * are relative to the state directory.
 */
export function readLocalFleet(stateDir: string): LocalFleetInfo {
  const file = path.join(stateDir, 'fleet.json');
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new MoveError(
      code === 'ENOENT'
        ? `${file} not found: start the local fleet (\`cellctl fleet local\`), or pass --state-dir DIR where it keeps its state`
        : `${file}: ${(error as Error).message}`,
    );
  }
  if (!isObject(doc)) throw new MoveError(`${file}: not a JSON object`);
  // `cellctl fleet local` writes its pid, and 0 once stopped.
  if (typeof doc.pid === 'number' && !pidRunning(doc.pid)) {
    throw new MoveError(
      `the local fleet in ${stateDir} is not running${doc.pid ? ` (pid ${doc.pid} is gone)` : ''}; start it with \`cellctl fleet local --state-dir ${stateDir}\``,
    );
  }
  const mapping = doc.mappingFile ?? (isObject(doc.router) ? doc.router.mappingFile : undefined);
  if (typeof mapping !== 'string') throw new MoveError(`${file}: no mappingFile`);
  const urls = doc.routerUrls ?? doc.routerUrl ?? (isObject(doc.router) ? doc.router.url : undefined);
  const routerUrls = (Array.isArray(urls) ? urls : [urls]).filter((u): u is string => typeof u === 'string');
  if (routerUrls.length === 0) throw new MoveError(`${file}: no routerUrl`);
  const header = doc.partitionHeader ?? (isObject(doc.partitionKey) ? doc.partitionKey.name : undefined) ?? DEFAULT_PARTITION_KEY.name;
  const rawCells = doc.cells;
  const entries: [string, unknown][] = Array.isArray(rawCells)
    ? rawCells.map((c) => [String((c as Record<string, unknown>).id), c])
    : isObject(rawCells)
      ? Object.entries(rawCells)
      : [];
  if (entries.length === 0) throw new MoveError(`${file}: no cells`);
  const cells: Record<string, CellDatabase> = {};
  for (const [id, cell] of entries) cells[id] = database(id, isObject(cell) ? (cell.database ?? cell.db) : undefined, file);
  return {
    stateDir,
    mappingFile: path.resolve(stateDir, mapping),
    routerUrls,
    partitionHeader: String(header),
    cells,
    ...(typeof doc.cellZero === 'string' ? { cellZero: doc.cellZero } : {}),
  };
}

/**
 * Asks each local router which mapping version it serves: the `x-mapping-version` debug header the
 * local fleet's routers add to every response (a request without a key gets a 400 that carries it).
 */
export function routerVersionProbe(routerUrls: readonly string[]): VersionProbe {
  const ask = (url: string) =>
    new Promise<number | undefined>((resolve) => {
      const request = http.get(url, { timeout: 2000 }, (response) => {
        response.resume();
        const version = Number(response.headers['x-mapping-version']);
        resolve(Number.isInteger(version) ? version : undefined);
      });
      request.on('timeout', () => request.destroy());
      request.on('error', () => resolve(undefined));
    });
  return async () => Object.fromEntries(await Promise.all(routerUrls.map(async (url) => [url, await ask(url)] as const)));
}
