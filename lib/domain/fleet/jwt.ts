import { createPublicKey } from 'crypto';
import { ROUTED_KEY_HEADER } from './defaults';
import { PartitionKeySource } from './types';

/** The signature algorithms a verified tenant token may use, and the key type each needs. */
export const JWT_ALGORITHMS = { RS256: 'rsa', ES256: 'ec' } as const;
export type JwtAlgorithm = keyof typeof JWT_ALGORITHMS;

/** At most this many public keys at once: one in use and the next, during a rotation, and room to spare. */
export const MAX_JWT_KEYS = 4;

/** A claim name the router can query (`$.<claim>`): letters, digits and `_`, not starting with a digit. */
export const JWT_CLAIM = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * What is wrong with a verified-token partition key (`partitionKey.source: 'jwt'`), one line each:
 * the claim, the algorithm, and each public key (a PEM `PUBLIC KEY` of the algorithm's type, P-256
 * for ES256).
 */
export function jwtKeyProblems(key: { claim?: unknown; algorithm?: unknown; publicKeys?: unknown }): string[] {
  const problems: string[] = [];
  if (typeof key.claim !== 'string' || !JWT_CLAIM.test(key.claim))
    problems.push(
      `partitionKey.claim: \`${String(key.claim)}\` is not a claim name the router can read; use letters, digits and _ (such as \`tenant\`)`,
    );
  const algorithm = key.algorithm as JwtAlgorithm;
  if (!Object.prototype.hasOwnProperty.call(JWT_ALGORITHMS, algorithm))
    problems.push(`partitionKey.algorithm: \`${String(key.algorithm)}\` must be ${Object.keys(JWT_ALGORITHMS).join(' or ')}`);
  const keys = Array.isArray(key.publicKeys) ? (key.publicKeys as unknown[]) : [];
  if (keys.length === 0 || keys.length > MAX_JWT_KEYS)
    problems.push(
      `partitionKey.publicKeys: give 1 to ${MAX_JWT_KEYS} PEM public keys (the issuer's signing keys: the current one, and the next during a rotation); got ${keys.length}`,
    );
  keys.forEach((pem, i) => {
    const at = `partitionKey.publicKeys[${i}]`;
    if (typeof pem !== 'string' || !pem.includes('-----BEGIN PUBLIC KEY-----')) {
      problems.push(`${at}: not a PEM public key (-----BEGIN PUBLIC KEY----- …); export it with \`openssl pkey -pubout\``);
      return;
    }
    try {
      const parsed = createPublicKey(pem);
      const wanted = JWT_ALGORITHMS[algorithm];
      if (wanted && parsed.asymmetricKeyType !== wanted)
        problems.push(`${at}: an ${parsed.asymmetricKeyType} key, but ${algorithm} tokens are verified with an ${wanted} key`);
      else if (algorithm === 'ES256' && parsed.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
        problems.push(`${at}: ES256 needs a P-256 key; this one is on ${parsed.asymmetricKeyDetails?.namedCurve}`);
    } catch (error) {
      problems.push(`${at}: cannot be read as a public key (${(error as Error).message})`);
    }
  });
  return problems;
}

/**
 * The key source a cell's workload reads: with verified tokens the router forwards the verified
 * claim in `x-tenant-id` (the cell is reached only through the router's PrivateLink path); any other
 * source the workload reads where the client put it.
 */
export function workloadPartitionKey(key: PartitionKeySource): PartitionKeySource {
  return key.source === 'jwt' ? { source: 'header', name: ROUTED_KEY_HEADER } : key;
}
