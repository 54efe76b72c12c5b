import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@aws-sdk/types';
import { credentialsHint, isCredentialsError, NoCredentialsError } from './credentials';

/**
 * Builds the error a caller throws (the move engine's MoveError ...); `credentials` is set when the
 * caller's own credentials failed. By default a plain Error, and a NoCredentialsError for the latter
 * (cellctl prints its one line as it is).
 */
export type ErrorOf = (message: string, credentials?: Error) => Error;
const plain: ErrorOf = (message, credentials) => (credentials ? new NoCredentialsError(credentials) : new Error(message));

const EARLY_REFRESH_MS = 5 * 60_000;

/**
 * Credentials of `roleArn`, assumed with `base` (the SDK's standard chain when undefined) and
 * refreshed before they expire (role chaining caps them at an hour). The SDK clients given it call
 * it when they sign; a failure says which role could not be assumed and why, in one line.
 */
export function assumedRole(
  roleArn: string,
  sessionName: string,
  base: AwsCredentialIdentityProvider | undefined,
  region: string,
  errorOf: ErrorOf = plain,
): AwsCredentialIdentityProvider {
  let cached: AwsCredentialIdentity | undefined;
  return async () => {
    if (cached?.expiration && cached.expiration.getTime() - Date.now() > EARLY_REFRESH_MS) return cached;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
    const { AssumeRoleCommand, STSClient } = require('@aws-sdk/client-sts') as typeof import('@aws-sdk/client-sts');
    const sts = new STSClient({ region, ...(base ? { credentials: base } : {}) });
    let answer;
    try {
      answer = await sts.send(new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: sessionName }));
    } catch (error) {
      if (isCredentialsError(error)) throw errorOf(credentialsHint(error as Error), error as Error);
      throw errorOf(`cannot assume ${roleArn} (${(error as Error).name}: ${(error as Error).message})`);
    } finally {
      sts.destroy();
    }
    const c = answer.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey) throw errorOf(`AssumeRole ${roleArn} returned no credentials`);
    cached = { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, expiration: c.Expiration };
    return cached;
  };
}

/** The value of SSM parameter `name` in `region`; `missing` says what to do when it does not exist. */
export async function ssmParameter(
  name: string,
  region: string,
  credentials: AwsCredentialIdentityProvider | undefined,
  missing: string,
  errorOf: ErrorOf = plain,
): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetParameterCommand, SSMClient } = require('@aws-sdk/client-ssm') as typeof import('@aws-sdk/client-ssm');
  const ssm = new SSMClient({ region, ...(credentials ? { credentials } : {}) });
  let value: string | undefined;
  try {
    value = (await ssm.send(new GetParameterCommand({ Name: name }))).Parameter?.Value;
  } catch (error) {
    if ((error as Error).name === 'ParameterNotFound') throw errorOf(`SSM ${name} in ${region} not found: ${missing}`);
    if (isCredentialsError(error)) throw errorOf(credentialsHint(error as Error), error as Error);
    // Not the service's answer (no $metadata): the credentials provider's own one-line error (a role
    // that could not be assumed), passed on as it is.
    if (error instanceof Error && !('$metadata' in error)) throw error;
    throw errorOf(`reading SSM ${name} in ${region} failed: ${(error as Error).name}: ${(error as Error).message}`);
  } finally {
    ssm.destroy();
  }
  if (!value) throw errorOf(`SSM ${name} in ${region} is empty`);
  return value;
}
