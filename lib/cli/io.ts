import * as fs from 'fs';
import { writeFileAtomic as writeAtomic } from '../domain/files';

/** Where a command writes: stdout for results (tables or --json), stderr for progress and errors. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Where SIGINT and SIGTERM arrive for commands that clean up on them (`cellctl move` on AWS). @default process */
  readonly signals?: NodeJS.EventEmitter;
}

export const processIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** Exit codes: 0 success, 1 invalid input (problems listed), 2 usage error. */
export const EXIT = { ok: 0, invalid: 1, usage: 2 } as const;

/** A failure the operator can fix; `exitCode` 1 for bad input, 2 for bad usage. */
export class CliError extends Error {
  constructor(
    message: string,
    public readonly exitCode: number = EXIT.invalid,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Left-aligned text table with a header row. */
export function formatTable(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return `${cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n')}\n`;
}

/** Atomic write (see lib/domain/files); a failure is an exit-1 CLI error and the old file stays whole. */
export function writeFileAtomic(file: string, text: string): void {
  try {
    writeAtomic(file, text);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

export function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(code === 'ENOENT' ? `${file}: no such file` : `${file}: ${(error as Error).message}`);
  }
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * The AWS SDK warns on Node < 22 with seven lines on every AWS command (NodeVersionSupportWarning).
 * One line on stderr says the same; other warnings pass through unchanged.
 */
export function collapseSdkWarnings(err: (text: string) => void): void {
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.startsWith('NodeVersionSupportWarning')) {
      const needed = /node >=\s*(\d+)/.exec(text)?.[1] ?? '22';
      err(`note: AWS SDK releases after early January 2027 need Node ${needed} or newer; this is Node ${process.version}\n`);
      return;
    }
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}

/** A whole-number flag value from `min` to `max`; otherwise a usage error (exit 2) naming the flag. */
export function integerFlag(value: string, flag: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new CliError(`${flag} ${value}: give an integer from ${min} to ${max}`, 2);
  return n;
}
