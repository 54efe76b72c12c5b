import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

export interface DatabaseCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * Where each new database connection gets its credentials. Read at connect time, never once at
 * start: Secrets Manager rotation changes the password under running tasks (ECS does not push a
 * rotated secret into running containers), so a task that read it at start fails its next connection.
 */
export interface CredentialSource {
  get(): Promise<DatabaseCredentials>;
  /** The database refused the last credentials: fetch fresh ones on the next `get()`. */
  invalidate(): void;
}

export function staticCredentials(username: string, password: string): CredentialSource {
  return { get: async () => ({ username, password }), invalidate: () => undefined };
}

export interface CachedSecretOptions {
  /** Fetches the secret string (JSON with `username` and `password`). */
  readonly fetch: () => Promise<string>;
  /** What the secret is, for error messages. */
  readonly name: string;
  /** @default 60000: at most this old when a connection opens */
  readonly maxAgeMs?: number;
  readonly now?: () => number;
}

/**
 * Credentials from a secret, cached at most `maxAgeMs` (60 s) and dropped at once on an
 * authentication failure; concurrent connects share one fetch.
 */
export function cachedSecretCredentials(o: CachedSecretOptions): CredentialSource {
  const maxAge = o.maxAgeMs ?? 60_000;
  const now = o.now ?? Date.now;
  let cached: { value: DatabaseCredentials; at: number } | undefined;
  let pending: Promise<DatabaseCredentials> | undefined;
  const load = async (): Promise<DatabaseCredentials> => {
    const text = await o.fetch();
    let parsed: { username?: unknown; password?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new Error(`${o.name}: the secret is not JSON; it must be {"username": ..., "password": ...} (the RDS-generated secret's shape)`);
    }
    if (typeof parsed.username !== 'string' || typeof parsed.password !== 'string') {
      throw new Error(`${o.name}: the secret has no string username and password`);
    }
    return { username: parsed.username, password: parsed.password };
  };
  return {
    get: async () => {
      if (cached && now() - cached.at < maxAge) return cached.value;
      if (!pending) {
        const at = now();
        pending = load()
          .then((value) => {
            cached = { value, at };
            return value;
          })
          .finally(() => {
            pending = undefined;
          });
      }
      return pending;
    },
    invalidate: () => {
      cached = undefined;
    },
  };
}

/** The cell's database secret in Secrets Manager (the task role may read this one secret). */
export function secretsManagerCredentials(secretArn: string, region?: string): CredentialSource {
  const client = new SecretsManagerClient(region ? { region } : {});
  return cachedSecretCredentials({
    name: secretArn,
    fetch: async () => {
      const result = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
      if (!result.SecretString) throw new Error(`${secretArn}: the secret has no SecretString`);
      return result.SecretString;
    },
  });
}
