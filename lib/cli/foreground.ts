import { CliIo } from './io';

export interface ForegroundOptions {
  readonly io: CliIo;
  /** Where SIGTERM, SIGINT and SIGHUP arrive (`process`; an emitter in tests). */
  readonly signals: NodeJS.EventEmitter;
  /** This process's parent pid now (`process.ppid`). */
  readonly parentPid: () => number;
  /** The parent when the command started: read before a long start, so a parent that died meanwhile is seen. */
  readonly parent: number;
  readonly parentPollMs: number;
  /** `router`, `fleet`: for the message when the parent goes. */
  readonly what: string;
  /** Stops what the command runs (gracefully); the returned promise resolves once it has. */
  readonly stop: () => Promise<void>;
}

/**
 * Keeps a foreground command (`router local`, `fleet local`) running until SIGTERM, SIGINT or SIGHUP,
 * or until the process that started it goes away without a signal reaching here (`npx … & kill $!`
 * ends npx only; a SIGKILLed test or shell): orphans are re-parented, so the parent pid changes,
 * and the command stops as on SIGTERM. What it started is also tied to this process by watchdogs
 * (`startWatchdog`), so even a SIGKILL here leaves nothing running.
 */
export function runUntilStopped(o: ForegroundOptions): Promise<void> {
  return new Promise<void>((resolve) => {
    const orphaned = setInterval(() => {
      if (o.parentPid() === o.parent) return;
      o.io.err(`the process that started this ${o.what} (pid ${o.parent}) exited; stopping\n`);
      stop();
    }, o.parentPollMs);
    const stop = () => {
      clearInterval(orphaned);
      for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) o.signals.off(signal, stop);
      void o.stop().then(resolve);
    };
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) o.signals.on(signal, stop);
  });
}
