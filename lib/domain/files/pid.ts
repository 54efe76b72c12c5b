import * as fs from 'fs';

/**
 * Whether the process with this pid (read from a pid file, a lock or a state file) is running.
 * A zombie (exited, not yet reaped by its parent) counts as gone; a process of another user
 * (EPERM) as running. No pid (undefined, 0, negative, fractional): not running.
 */
export function pidRunning(pid: number | undefined): boolean {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return !/^\d+ \(.*\) Z/.test(stat);
}
