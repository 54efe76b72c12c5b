import * as fs from 'fs';
import * as path from 'path';
import { writeFileAtomic as writeAtomic } from '../domain/files';

/** Where a command writes: stdout for results (tables or --json), stderr for progress and errors. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Where SIGINT and SIGTERM arrive for commands that clean up on them (`cellctl move` on AWS). @default process */
  readonly signals?: NodeJS.EventEmitter;
  /** Where `err` writes, when it is a stream that may be a terminal (progress lines only go to a terminal). */
  readonly errStream?: { readonly isTTY?: boolean; write(text: string): unknown };
}

export const processIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  errStream: process.stderr,
};

/** Exit codes: 0 success, 1 invalid input (problems listed), 2 usage error, 3 a partial answer (`fleet get`: some cells gave none). */
export const EXIT = { ok: 0, invalid: 1, usage: 2, partial: 3 } as const;

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

/**
 * How the operator ran cellctl, for the commands it prints: `node bin/cellctl.js` from a checkout
 * (where `cellctl` is not on PATH), `cellctl` when installed (node_modules/.bin, a global install).
 * `script` is process.argv[1]; a path outside node_modules ending in bin/cellctl.js or .ts is a checkout's.
 */
export function invocationName(script: string | undefined, cwd: string = process.cwd()): string {
  if (!script || /node_modules/.test(script) || !/[\\/]bin[\\/]cellctl\.(js|ts)$/.test(script)) return 'cellctl';
  const relative = path.relative(cwd, script.replace(/\.ts$/, '.js'));
  return `node ${relative.startsWith('..') || path.isAbsolute(relative) ? script.replace(/\.ts$/, '.js') : relative}`;
}

/** The commands a line names (`cellctl move plan …`, in backticks or starting a line) as `name` writes them. */
export function withInvocation(text: string, name: string): string {
  // JSON (--json documents, the router's log lines) is data for programs: left as it is.
  if (name === 'cellctl' || /^\s*[{[]/.test(text)) return text;
  return text.replace(/(^|[`\s(])cellctl (?=[a-z-])/gm, `$1${name} `);
}

/** An io whose printed commands use `name` (bin/cellctl.ts: how this process was started). */
export function invokedAs(io: CliIo, name: string): CliIo {
  return { ...io, out: (t) => io.out(withInvocation(t, name)), err: (t) => io.err(withInvocation(t, name)) };
}
