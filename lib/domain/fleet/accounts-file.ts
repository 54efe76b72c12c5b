import * as fs from 'fs';
import { writeFileAtomic } from '../files';
import { displayPath } from './display-path';
import { suggestion } from './schema';
import { CellAccounts, FleetConfigError } from './validate';

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

const STATUSES = ['CREATING', 'CREATED', 'ACTIVE', 'FAILED'];
const RECORD_KEYS: Readonly<Record<keyof CellAccountRecord, 'string'>> = {
  accountId: 'string',
  createAccountRequestId: 'string',
  status: 'string',
  failureReason: 'string',
  organizationalUnit: 'string',
  email: 'string',
};

/** Every problem with the file's content, one line each (the file itself is named by the caller). */
export function accountsFileProblems(parsed: unknown): string[] {
  const file = parsed as Partial<AccountsFile> | null;
  if (
    typeof file !== 'object' ||
    file === null ||
    Array.isArray(file) ||
    file.schemaVersion !== 1 ||
    typeof file.cells !== 'object' ||
    file.cells === null ||
    Array.isArray(file.cells)
  ) {
    return ['expected {"schemaVersion": 1, "cells": {"<cell-id>": {"accountId": "…"}}}'];
  }
  const problems: string[] = [];
  for (const key of Object.keys(file)) {
    if (key !== 'schemaVersion' && key !== 'cells') problems.push(`unknown key \`${key}\`${suggestion(key, ['schemaVersion', 'cells'])}`);
  }
  for (const [cell, record] of Object.entries(file.cells as Record<string, unknown>)) {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      problems.push(`cells.${cell} must be an object such as {"accountId": "123456789012"}`);
      continue;
    }
    for (const [key, value] of Object.entries(record)) {
      if (!(key in RECORD_KEYS)) problems.push(`cells.${cell}: unknown key \`${key}\`${suggestion(key, Object.keys(RECORD_KEYS))}`);
      else if (typeof value !== 'string') problems.push(`cells.${cell}.${key} must be a string, got ${JSON.stringify(value)}`);
    }
    const { status } = record as CellAccountRecord;
    if (typeof status === 'string' && !STATUSES.includes(status))
      problems.push(`cells.${cell}.status must be ${STATUSES.join(', ')}; got \`${status}\``);
  }
  return problems;
}

/**
 * Reads `cells.accounts.json`; a missing file is an empty one. A malformed one throws a
 * `FleetConfigError` naming the file, with every problem and how to fix it.
 */
export function readAccountsFile(path: string): AccountsFile {
  if (!fs.existsSync(path)) return { schemaVersion: 1, cells: {} };
  const shown = displayPath(path);
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (error) {
    throw new FleetConfigError(
      [`${shown}: not valid JSON (${(error as Error).message}); fix it or delete it and run \`cellctl accounts ensure\``],
      shown,
    );
  }
  const problems = accountsFileProblems(parsed);
  if (problems.length > 0) throw new FleetConfigError(problems.length === 1 ? [`${shown}: ${problems[0]}`] : problems, shown);
  return parsed as AccountsFile;
}

/** Writes `cells.accounts.json` atomically, cells sorted, so a crash never loses a recorded id. */
export function writeAccountsFile(path: string, file: AccountsFile): void {
  const cells = Object.fromEntries(
    Object.keys(file.cells)
      .sort()
      .map((id) => [id, file.cells[id]]),
  );
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
