import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { FleetConfigError, loadFleet, readAccountsFile } from '../../../lib/domain/fleet';
import { REPO_ROOT, shippedConfigText } from '../../support/fleet';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fleet-'));
}

/** Copies the shipped config into a temp dir (with its import rewritten) and an optional accounts file. */
function fleetDir(accounts?: string): string {
  const dir = tempDir();
  const config = shippedConfigText();
  fs.writeFileSync(path.join(dir, 'cells.config.ts'), config);
  if (accounts !== undefined) fs.writeFileSync(path.join(dir, 'cells.accounts.json'), accounts);
  return dir;
}

describe('loadFleet', () => {
  it('loads the shipped example fleet: two regions, one canary, at least six regular cells', () => {
    const fleet = loadFleet(path.join(REPO_ROOT, 'cells.config.ts'));
    expect(new Set(fleet.cells.map((c) => c.region)).size).toBe(2);
    expect(fleet.cells.filter((c) => c.canary)).toHaveLength(1);
    expect(fleet.cells.filter((c) => !c.canary).length).toBeGreaterThanOrEqual(6);
    expect(fleet.cells.every((c) => /^\d{12}$/.test(c.account))).toBe(true);
  });

  it('keeps example account ids out of the config: they come from cells.accounts.json', () => {
    const config = fs.readFileSync(path.join(REPO_ROOT, 'cells.config.ts'), 'utf8');
    expect(config).not.toMatch(/account:\s*'/);
    const file = readAccountsFile(path.join(REPO_ROOT, 'cells.accounts.json'));
    expect(Object.keys(file.cells).length).toBe(loadFleet(path.join(REPO_ROOT, 'cells.config.ts')).cells.length);
  });

  it('fails naming the command to run when cells.accounts.json is missing', () => {
    const dir = fleetDir();
    expect(() => loadFleet(path.join(dir, 'cells.config.ts'))).toThrow(FleetConfigError);
    expect(() => loadFleet(path.join(dir, 'cells.config.ts'))).toThrow(/cell `canary-eu`: no account; run `cellctl accounts ensure`/);
  });

  it('rejects a malformed accounts file with a fix', () => {
    const dir = fleetDir('{"cells": [}');
    expect(() => loadFleet(path.join(dir, 'cells.config.ts'))).toThrow(/cells.accounts.json: not valid JSON .*cellctl accounts ensure/);
    const wrongShape = fleetDir('{"cells": {}}');
    expect(() => loadFleet(path.join(wrongShape, 'cells.config.ts'))).toThrow(/expected \{"schemaVersion": 1/);
  });

  it('rejects a config without a default export', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'cells.config.ts'), 'export const fleet = 1;\n');
    expect(() => loadFleet(path.join(dir, 'cells.config.ts'))).toThrow(/no default export; write `export default defineFleet/);
  });
});
