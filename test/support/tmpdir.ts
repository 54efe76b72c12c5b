import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/**
 * Jest global setup: every test run gets one temporary folder of its own, and `os.tmpdir()` (in the
 * tests and in every process they start: the CLI, `router local`, HAProxy) points into it. The
 * teardown removes it, so a run leaves nothing in /tmp even when a test forgets to clean up or fails
 * half-way. Tests still remove what they create; this is the net under them.
 */
export default function setup(): void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-factory-test-'));
  process.env.CELL_FACTORY_TEST_TMP = root;
  process.env.TMPDIR = root;
}

export function teardown(): void {
  const root = process.env.CELL_FACTORY_TEST_TMP;
  if (root && path.basename(root).startsWith('cell-factory-test-')) fs.rmSync(root, { recursive: true, force: true });
}
