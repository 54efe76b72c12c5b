import * as fs from 'fs';
import { writeFileAtomic } from '../files';
import { CellAccounts } from './validate';

/** One cell's entry in `cells.accounts.json`. */
export interface CellAccountRecord {
  readonly accountId?: string;
  /** CreateAccount request id, kept so an interrupted vend can resume. */
  readonly createAccountRequestId?: string;
  /** CREATING (request sent), CREATED (account exists), ACTIVE (in its OU), FAILED. */
  readonly status?: 'CREATING' | 'CREATED' | 'ACTIVE' | 'FAILED';
  readonly failureReason?: string;
  readonly organizationalUnit?: string;
  readonly email?: string;
}

export interface AccountsFile {
  readonly schemaVersion: 1;
  readonly cells: Readonly<Record<string, CellAccountRecord>>;
}

export const ACCOUNTS_FILE_NAME = 'cells.accounts.json';

/** Reads `cells.accounts.json`; a missing file is an empty one, a malformed one is an error. */
export function readAccountsFile(path: string): AccountsFile {
  if (!fs.existsSync(path)) return { schemaVersion: 1, cells: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message}); fix it or delete it and run \`cellctl accounts ensure\``);
  }
  const file = parsed as Partial<AccountsFile>;
  if (file?.schemaVersion !== 1 || typeof file.cells !== 'object' || file.cells === null) {
    throw new Error(`${path}: expected {"schemaVersion": 1, "cells": {"<cell-id>": {"accountId": "…"}}}`);
  }
  return file as AccountsFile;
}

/** Writes `cells.accounts.json` atomically, cells sorted, so a crash never loses a recorded id. */
export function writeAccountsFile(path: string, file: AccountsFile): void {
  const cells = Object.fromEntries(Object.keys(file.cells).sort().map((id) => [id, file.cells[id]]));
  writeFileAtomic(path, `${JSON.stringify({ schemaVersion: 1, cells }, null, 2)}\n`);
}

/** Cell id → account id for the cells whose account is known. */
export function cellAccounts(file: AccountsFile): CellAccounts {
  const accounts: Record<string, string> = {};
  for (const [cell, record] of Object.entries(file.cells)) {
    if (record.accountId) accounts[cell] = record.accountId;
  }
  return accounts;
}
