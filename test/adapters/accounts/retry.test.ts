import { MissingPermissionError, withRetry } from '../../../lib/adapters/accounts';

const failing = (name: string) => Object.assign(new Error(name), { name });

describe('withRetry', () => {
  it('gives up after the configured attempts, with doubling delays capped at 30 s', async () => {
    const slept: number[] = [];
    let calls = 0;
    const run = async () => {
      calls += 1;
      throw failing('TooManyRequestsException');
    };
    await expect(
      withRetry('ListAccounts', run, {
        sleep: async (ms) => {
          slept.push(ms);
        },
        attempts: 7,
        baseDelayMs: 4000,
      }),
    ).rejects.toThrow('TooManyRequestsException');
    expect(calls).toBe(7);
    expect(slept).toEqual([4000, 8000, 16000, 30000, 30000, 30000]);
  });

  it('does not retry other errors', async () => {
    let calls = 0;
    await expect(
      withRetry(
        'CreateAccount',
        async () => {
          calls += 1;
          throw failing('ConstraintViolationException');
        },
        { sleep: async () => undefined },
      ),
    ).rejects.toThrow('ConstraintViolationException');
    expect(calls).toBe(1);
  });

  it('turns access denied into a message naming the action', async () => {
    await expect(
      withRetry(
        'MoveAccount',
        async () => {
          throw failing('AccessDeniedException');
        },
        { sleep: async () => undefined },
      ),
    ).rejects.toEqual(
      expect.objectContaining({
        name: 'MissingPermissionError',
        action: 'MoveAccount',
        message: expect.stringContaining('organizations:MoveAccount'),
      }),
    );
    expect(MissingPermissionError).toBeDefined();
  });
});
