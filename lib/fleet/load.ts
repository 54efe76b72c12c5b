import * as path from 'path';
import { ACCOUNTS_FILE_NAME, cellAccounts, readAccountsFile } from './accounts-file';
import { Fleet, FleetInput } from './types';
import { resolveFleet } from './validate';

export const CONFIG_FILE_NAME = 'cells.config.ts';

/** The raw config (default export of `cells.config.ts`) and where its accounts file lives. */
export function loadFleetInput(configPath: string = path.resolve(CONFIG_FILE_NAME)): { input: FleetInput; accountsPath: string } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require(path.resolve(configPath)) as { default?: FleetInput };
  if (!loaded.default) {
    throw new Error(`${configPath}: no default export; write \`export default defineFleet({...})\``);
  }
  return { input: loaded.default, accountsPath: path.join(path.dirname(path.resolve(configPath)), ACCOUNTS_FILE_NAME) };
}

/**
 * Loads `cells.config.ts` (its default export) and the `cells.accounts.json` beside it,
 * validates both and returns the fleet. Throws `FleetConfigError` listing every problem.
 */
export function loadFleet(configPath: string = path.resolve(CONFIG_FILE_NAME)): Fleet {
  const { input, accountsPath } = loadFleetInput(configPath);
  return resolveFleet(input, cellAccounts(readAccountsFile(accountsPath)));
}
