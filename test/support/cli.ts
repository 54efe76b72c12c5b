import { runCli } from '../../lib/cli';

/** Runs `cellctl <argv>` in this process (lib/cli's runCli), collecting what it prints. */
export async function cellctl(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
  });
  return { code, out, err };
}

/**
 * `cellctl` run in this process from the folder `cwd`, as an operator runs it there: its default
 * `cells.config.ts` and the paths in its messages are relative to that folder. The working
 * directory is restored afterwards (jest runs each test file in a process of its own).
 */
export async function cellctlIn(cwd: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const before = process.cwd();
  process.chdir(cwd);
  try {
    return await cellctl(...argv);
  } finally {
    process.chdir(before);
  }
}
