import * as fs from 'fs';
import * as path from 'path';
import { displayPath } from './display-path';
import { ACCOUNTS_FILE_NAME, cellAccounts, readAccountsFile } from './accounts-file';
import { Fleet, FleetInput } from './types';
import { FleetConfigError, laneSettingsOf, resolveFleet } from './validate';
import { LANES_FILE_NAME, readLanesFile } from '../lanes/lanes-file';

export const CONFIG_FILE_NAME = 'cells.config.ts';

/**
 * Loads a TypeScript file. Under tsx or jest `.ts` already loads; from compiled JavaScript (the
 * `cellctl` bin) tsx's loader is registered on first use only, so commands that need no config
 * do not pay for it.
 */
function requireConfig(file: string): unknown {
  // Node's own loader lists '.js'; Jest's require shows an empty object and loads .ts through its
  // transform. (An environment variable would leak into the processes tests start.)
  const nodeLoader = require.extensions !== undefined && '.js' in require.extensions;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- tsx is registered only when a .ts fleet file is loaded under plain node
  if (file.endsWith('.ts') && nodeLoader && !require.extensions['.ts']) require('tsx/cjs/api').register();
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the fleet file is loaded by its path, at run time
  return require(file);
}

/**
 * One line for an error thrown while loading the config: `file:line:col: message` for a syntax
 * error (esbuild's "Transform failed" report) or an exception thrown at that place in the file.
 */
export function configLoadProblem(error: unknown, file: string): string {
  const shown = displayPath(file);
  const message = error instanceof Error ? error.message : String(error);
  const syntax = /^(.+?):(\d+):(\d+): ERROR: (.*)$/m.exec(message);
  // esbuild counts columns from 0; editors and stack traces from 1.
  if (syntax) return `${displayPath(syntax[1])}:${syntax[2]}:${Number(syntax[3]) + 1}: ${syntax[4]}`;
  const frame =
    error instanceof Error && error.stack
      ? error.stack
          .split('\n')
          .map((line) => /\(?([^()\s]+):(\d+):(\d+)\)?$/.exec(line.trim()))
          .find((m) => m && path.resolve(m[1]) === file)
      : undefined;
  const name = error instanceof Error && error.name !== 'Error' ? `${error.name}: ` : '';
  const firstLine = message.split('\n')[0];
  return frame ? `${shown}:${frame[2]}:${frame[3]}: ${name}${firstLine}` : `${shown}: ${name}${firstLine}`;
}

/** The raw config (default export of `cells.config.ts`) and where its accounts file lives. */
export function loadFleetInput(configPath: string = path.resolve(CONFIG_FILE_NAME)): { input: FleetInput; accountsPath: string; file: string } {
  const file = path.resolve(configPath);
  const shown = displayPath(file);
  if (!fs.existsSync(file)) {
    throw new FleetConfigError(
      [
        `${shown}: not found; run from the project root (where ${CONFIG_FILE_NAME} is), or name the file with --config (cellctl) or CELLS_CONFIG (cdk synth)`,
      ],
      shown,
    );
  }
  let loaded: { default?: FleetInput };
  try {
    loaded = requireConfig(file) as { default?: FleetInput };
  } catch (error) {
    throw new FleetConfigError([configLoadProblem(error, file)], shown);
  }
  if (!loaded.default) {
    throw new FleetConfigError([`${shown}: no default export; write \`export default defineFleet({...})\``], shown);
  }
  return { input: loaded.default, accountsPath: path.join(path.dirname(file), ACCOUNTS_FILE_NAME), file };
}

/**
 * The stored shard set for `router.lanes`: the file must exist and match the lane settings, since
 * a generated set would silently change when lanes are added.
 */
function storedShards(
  input: FleetInput,
  lanesPath: string,
): { laneShards?: readonly (readonly number[])[]; lanesFile?: string; lanesFileProblem?: string } {
  const lanes = input.router?.lanes;
  if (!lanes || typeof lanes !== 'object') return {};
  const shown = displayPath(lanesPath);
  let stored;
  try {
    stored = readLanesFile(lanesPath, shown);
  } catch (error) {
    return { lanesFile: shown, lanesFileProblem: (error as Error).message };
  }
  if (!stored)
    return { lanesFile: shown, lanesFileProblem: `router.lanes is set but ${shown} is missing: run \`cellctl lanes init\` and commit the file` };
  const settings = laneSettingsOf(lanes);
  if (stored.count !== settings.count || stored.perTenant !== settings.perTenant || stored.maxOverlap !== settings.maxOverlap)
    return {
      lanesFile: shown,
      lanesFileProblem: `${shown} holds ${stored.count} lanes, ${stored.perTenant} per tenant, overlap ${stored.maxOverlap}; router.lanes says ${settings.count}, ${settings.perTenant}, ${settings.maxOverlap}: run \`cellctl lanes init\` (it adds shards for new lanes and keeps the others)`,
    };
  return { laneShards: stored.shards, lanesFile: shown };
}

/**
 * Loads `cells.config.ts` (its default export) and the `cells.accounts.json` beside it,
 * validates both and returns the fleet. Throws `FleetConfigError` listing every problem.
 */
export function loadFleet(configPath: string = path.resolve(CONFIG_FILE_NAME)): Fleet {
  const { input, accountsPath, file } = loadFleetInput(configPath);
  const accounts = cellAccounts(readAccountsFile(accountsPath));
  try {
    return resolveFleet(input, accounts, {
      accountsFile: displayPath(accountsPath),
      ...storedShards(input, path.join(path.dirname(file), LANES_FILE_NAME)),
    });
  } catch (error) {
    if (error instanceof FleetConfigError) throw new FleetConfigError(error.problems, displayPath(file));
    throw error;
  }
}
