/**
 * Recognising the AWS SDK failures that mean "no usable credentials", whatever the call: the
 * credential chain found nothing, an SSO session expired, or the service rejected the token. They
 * are the operator's to fix once, so callers stop at the first one instead of repeating it per
 * cell, and say how to fix it in one line. Pure: looks at the error's name and message only.
 */

const NAMES = new Set([
  'CredentialsProviderError',
  'ExpiredToken',
  'ExpiredTokenException',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'TokenProviderError',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
  'InvalidAccessKeyId',
]);
const MESSAGES =
  /could not load credentials|unable to locate credentials|sso session .*(expired|invalid)|token .*(expired|invalid)|security token included in the request is (invalid|expired)/i;

export function isCredentialsError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return NAMES.has(error.name) || MESSAGES.test(error.message);
}

/** The SDK error it stands for, and the fix: which profile, or log in again. */
export class NoCredentialsError extends Error {
  constructor(public readonly sdkError: Error) {
    super(credentialsHint(sdkError));
    this.name = 'NoCredentialsError';
  }
}

/** One line: what the SDK said (first line) and how to fix it. */
export function credentialsHint(error: Error): string {
  const said = error.message.split('\n')[0].replace(/\.$/, '');
  const profile = process.env.AWS_PROFILE ? `profile \`${process.env.AWS_PROFILE}\`` : 'no AWS_PROFILE set';
  return `no usable AWS credentials (${profile}: ${said}); set AWS_PROFILE to a profile of the right account, or run \`aws sso login\` if its session expired`;
}
