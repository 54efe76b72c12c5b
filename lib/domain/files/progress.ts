/** Where progress goes: a stream that may be a terminal (process.stderr). */
export interface ProgressStream {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

/** Step-by-step progress of long work, on one rewritten line of a terminal; nothing elsewhere. */
export interface Progress {
  /** Shows the step, with its count and the time left when `done` of `total` are known. */
  step(text: string, count?: { readonly done: number; readonly total: number }): void;
  /** Clears the line, and writes `text` (a final line) when given. */
  finish(text?: string): void;
  readonly enabled: boolean;
}

const seconds = (ms: number) => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`);

/**
 * Progress on `stream` when it is a terminal and the command was not asked for JSON: each step
 * rewrites one line (`[12 s] synthesizing 8 cell stacks (3/8, about 20 s left)`), and `finish`
 * clears it. Off a terminal, or with `quiet`, it writes nothing: logs and `--json` stay clean.
 * No timer: it also serves synchronous work, shown at each step.
 */
export function progressOn(stream: ProgressStream, options: { readonly quiet?: boolean; readonly now?: () => number } = {}): Progress {
  const enabled = Boolean(stream.isTTY) && !options.quiet && process.env.CELLS_PROGRESS !== 'off';
  const now = options.now ?? Date.now;
  const started = now();
  // When the counted run began: at its first step (done 0), or when its total changed.
  let counted: { readonly total: number; readonly at: number } | undefined;
  let shown = false;
  return {
    enabled,
    step(text, count) {
      if (!enabled) return;
      const elapsed = now() - started;
      let tail = '';
      if (count) {
        if (!counted || counted.total !== count.total || count.done === 0) counted = { total: count.total, at: now() };
        const spent = now() - counted.at;
        const left = count.done > 0 && count.done < count.total ? (spent / count.done) * (count.total - count.done) : undefined;
        tail = ` (${count.done}/${count.total}${left !== undefined ? `, about ${seconds(left)} left` : ''})`;
      }
      stream.write(`\r\x1b[2K[${seconds(elapsed)}] ${text}${tail}`);
      shown = true;
    },
    finish(text) {
      if (!enabled) return;
      if (shown) stream.write('\r\x1b[2K');
      if (text) stream.write(`${text} (${seconds(now() - started)})\n`);
      shown = false;
    },
  };
}
