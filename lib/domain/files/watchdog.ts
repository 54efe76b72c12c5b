import { ChildProcess, spawn } from 'child_process';

export interface WatchdogOptions {
  /** What stops the process gracefully: HAProxy `USR1` (in-flight requests finish), PostgreSQL `INT` (fast shutdown), a workload `TERM`. */
  readonly signal: 'USR1' | 'INT' | 'TERM';
  /** SIGKILL after this long if the process is still running. */
  readonly killAfterMs: number;
  /** A directory to remove once the process has exited. */
  readonly removeDir?: string;
}

/**
 * Ties a child process to this process's lifetime, however this process ends, SIGKILL included: a
 * detached `sh` holds the read end of a pipe whose only write end is this process's, so its `cat`
 * sees end-of-file exactly when this process is gone. It then sends `signal`, waits for the process
 * (SIGKILL after `killAfterMs`) and removes `removeDir`. POSIX `sh`, `cat` and `kill` only, so it
 * works wherever HAProxy and PostgreSQL do (no Linux-only parent-death signal). `release()` disarms
 * it once the process has exited or been stopped by this one.
 */
export function startWatchdog(pid: number, o: WatchdogOptions): { readonly pid?: number; release(): void } {
  const script = [
    'cat >/dev/null',
    'kill -"$4" "$1" 2>/dev/null',
    'i=0',
    'while kill -0 "$1" 2>/dev/null; do',
    '  i=$((i + 1)); if [ "$i" -gt "$3" ]; then kill -KILL "$1" 2>/dev/null; break; fi',
    '  sleep 0.2',
    'done',
    'if [ -n "$2" ]; then rm -rf "$2"; fi',
  ].join('\n');
  const dog = spawn('sh', ['-c', script, 'cell-watchdog', String(pid), o.removeDir ?? '', String(Math.ceil(o.killAfterMs / 200)), o.signal], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  dog.on('error', () => undefined);
  dog.stdin!.on('error', () => undefined);
  // Neither the watchdog nor its pipe keeps this process running.
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void }).unref?.();
  let released = false;
  return {
    pid: dog.pid,
    release: () => {
      if (released) return;
      released = true;
      // Kill the shell before closing the pipe, so it never signals a pid that may be reused.
      dog.kill('SIGKILL');
      dog.stdin!.destroy();
    },
  };
}

/** Ties `child` to this process's lifetime with a watchdog (`startWatchdog`), disarmed when the child exits. */
export function watchChild(child: ChildProcess, o: WatchdogOptions): void {
  if (child.pid === undefined) return; // it did not start (its 'error' event says why)
  const dog = startWatchdog(child.pid, o);
  child.once('exit', () => dog.release());
}
