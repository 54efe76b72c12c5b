import { runCli } from '../../lib/cli';

/** Runs `cellctl <argv>` in this process (lib/cli's runCli), collecting what it prints. */
export async function cellctl(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => { out += s; }, err: (s) => { err += s; } });
  return { code, out, err };
}
