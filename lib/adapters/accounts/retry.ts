/** Organizations errors worth retrying: throttling and another change to the organization in flight. */
const RETRYABLE = new Set(['TooManyRequestsException', 'ConcurrentModificationException', 'ThrottlingException', 'ServiceException']);

/** The caller lacks an Organizations permission; the message names the action. */
export class MissingPermissionError extends Error {
  constructor(
    public readonly action: string,
    detail: string,
  ) {
    super(`missing permission organizations:${action} (${detail}); grant it to the role running cellctl in the management account`);
    this.name = 'MissingPermissionError';
  }
}

export interface RetryOptions {
  readonly sleep: (ms: number) => Promise<void>;
  /** @default 8 */
  readonly attempts?: number;
  /** First backoff; doubles each retry, capped at 30 s. @default 1000 */
  readonly baseDelayMs?: number;
  readonly progress?: (line: string) => void;
}

/** Calls `run`, retrying throttling with exponential backoff; access denied becomes MissingPermissionError. */
export async function withRetry<T>(action: string, run: () => Promise<T>, options: RetryOptions): Promise<T> {
  const attempts = options.attempts ?? 8;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      const name = (error as Error).name;
      if (name === 'AccessDeniedException' || name === 'AccessDenied') throw new MissingPermissionError(action, (error as Error).message);
      if (!RETRYABLE.has(name) || attempt >= attempts) throw error;
      const delay = Math.min(30_000, (options.baseDelayMs ?? 1000) * 2 ** (attempt - 1));
      options.progress?.(`${action}: ${name}, retrying in ${delay / 1000}s (attempt ${attempt + 1}/${attempts})`);
      await options.sleep(delay);
    }
  }
}
