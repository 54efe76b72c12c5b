import { isValidKey, keyProblem } from '../../../lib/domain/mapping';

describe('partition keys', () => {
  it.each(['a', 'tenant-42', 'A9._:@-x', 'x'.repeat(128), 'internal-eu-1'])('accepts %s', (key) => {
    expect(keyProblem(key)).toBeUndefined();
    expect(isValidKey(key)).toBe(true);
  });

  it.each([
    ['', /missing key/],
    ['-leading-dash', /must match/],
    ['.dot', /must match/],
    ['has space', /must match/],
    ['slash/inside', /must match/],
    ['ümlaut', /must match/],
    ['x'.repeat(129), /129 characters; at most 128/],
  ])('rejects %j', (key, message) => {
    expect(keyProblem(key)).toMatch(message);
    expect(isValidKey(key)).toBe(false);
  });

  it('rejects what is not a string', () => {
    expect(keyProblem(undefined)).toBe('missing key');
    expect(keyProblem(42)).toBe('missing key');
  });
});
