/** A valid partition key: ASCII letters and digits first, then up to 127 of `._:@-` and alphanumerics. */
export const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/** A valid prefix override: like a key, without the length minimum after the first character. */
export const PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,126}$/;

/** Why `key` is not a valid partition key, or undefined when it is. */
export function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string' || key.length === 0) return 'missing key';
  if (key.length > 128) return `key is ${key.length} characters; at most 128`;
  if (!KEY_PATTERN.test(key)) return `key \`${key.slice(0, 40)}\` must match ${KEY_PATTERN.source}`;
  return undefined;
}

export function isValidKey(key: unknown): key is string {
  return typeof key === 'string' && KEY_PATTERN.test(key);
}
