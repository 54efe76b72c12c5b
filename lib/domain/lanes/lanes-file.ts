import * as fs from 'fs';
import { writeFileAtomic } from '../files';
import { extendShards, LaneSettings, Shard, shardId, shardSetProblems } from './shards';

/**
 * `cells.lanes.json`, beside the fleet file: the default shard set, generated once (`cellctl lanes
 * init`) and kept, because a tenant's default shard is a function of this set. Adding lanes adds
 * shards after the stored ones; changing perTenant or maxOverlap is a new set (every tenant's shard
 * changes) and needs the file deleted on purpose.
 */
export interface LanesFile {
  readonly schemaVersion: 1;
  readonly count: number;
  readonly perTenant: number;
  readonly maxOverlap: number;
  readonly shards: readonly Shard[];
}

export const LANES_FILE_NAME = 'cells.lanes.json';

/** Reads the file, or undefined when there is none; a malformed one throws naming the file and the fix. */
export function readLanesFile(path: string, shown = path): LanesFile | undefined {
  if (!fs.existsSync(path)) return undefined;
  let parsed: Partial<LanesFile>;
  try {
    parsed = JSON.parse(fs.readFileSync(path, 'utf8')) as Partial<LanesFile>;
  } catch (error) {
    throw new Error(`${shown}: not valid JSON (${(error as Error).message}); restore it from version control`);
  }
  const ints = ['count', 'perTenant', 'maxOverlap'] as const;
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    parsed.schemaVersion !== 1 ||
    ints.some((k) => !Number.isInteger(parsed[k])) ||
    !Array.isArray(parsed.shards)
  )
    throw new Error(
      `${shown}: expected {"schemaVersion": 1, "count": 8, "perTenant": 2, "maxOverlap": 1, "shards": [[1, 2], …]}; restore it from version control`,
    );
  const file = parsed as LanesFile;
  const problems = shardSetProblems(file, file.shards, 'shards');
  if (problems.length > 0) throw new Error(`${shown}:\n  - ${problems.join('\n  - ')}`);
  return file;
}

/** What `cellctl lanes init` does to the stored set for the fleet's settings. */
export interface LanesInit {
  readonly file: LanesFile;
  /** Shards the init added (all of them for a new file). */
  readonly added: readonly Shard[];
  readonly action: 'created' | 'extended' | 'unchanged';
}

/**
 * The stored set brought to `settings`: created when there is none, extended (old shards kept,
 * first) when lanes were added, unchanged when it already fits. Fewer lanes, or another perTenant
 * or maxOverlap, would move tenants between shards: refused with what to do.
 */
export function initLanes(settings: LaneSettings, stored: LanesFile | undefined, shown = LANES_FILE_NAME): LanesInit {
  if (!stored) {
    const shards = extendShards(settings);
    return { file: { schemaVersion: 1, ...settings, shards }, added: shards, action: 'created' };
  }
  if (stored.perTenant !== settings.perTenant || stored.maxOverlap !== settings.maxOverlap)
    throw new Error(
      `${shown} holds shards of ${stored.perTenant} lanes with overlap ${stored.maxOverlap}; router.lanes asks ${settings.perTenant} and ${settings.maxOverlap}. ` +
        'A new shard size changes every tenant’s default shard: put router.lanes back, or delete the file and run `cellctl lanes init` knowing every tenant moves (docs/lanes.md)',
    );
  if (settings.count < stored.count)
    throw new Error(
      `${shown} has shards over ${stored.count} lanes; router.lanes.count is ${settings.count}. Removing lanes moves the tenants of every shard that uses them: ` +
        'drain those lanes first (docs/lanes.md, "Removing a lane"), or put count back',
    );
  const shards = extendShards(settings, stored.shards);
  const known = new Set(stored.shards.map(shardId));
  const added = shards.filter((s) => !known.has(shardId(s)));
  return {
    file: { schemaVersion: 1, ...settings, shards },
    added,
    action: added.length > 0 || settings.count !== stored.count ? 'extended' : 'unchanged',
  };
}

/** Writes the file atomically, one shard per line so a review diff shows added shards. */
export function writeLanesFile(path: string, file: LanesFile): void {
  const shards = file.shards.map((s) => `    ${JSON.stringify(s)}`).join(',\n');
  writeFileAtomic(
    path,
    `{\n  "schemaVersion": 1,\n  "count": ${file.count},\n  "perTenant": ${file.perTenant},\n  "maxOverlap": ${file.maxOverlap},\n  "shards": [\n${shards}\n  ]\n}\n`,
  );
}
