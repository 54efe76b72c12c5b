import fc from 'fast-check';
import { cidrsOverlap, parseCidr } from '../../../lib/domain/fleet';

describe('parseCidr', () => {
  it('parses network addresses', () => {
    expect(parseCidr('10.1.0.0/16')).toEqual({ first: 10 * 2 ** 24 + 2 ** 16, last: 10 * 2 ** 24 + 2 * 2 ** 16 - 1, prefix: 16 });
  });
  it.each(['10.1.0.1/16', '10.1.0.0', '256.0.0.0/8', '10.0.0.0/33', 'ten/8'])('rejects %s', (cidr) => {
    expect(parseCidr(cidr)).toBeUndefined();
  });
});

describe('cidrsOverlap', () => {
  it('detects nesting and adjacency correctly', () => {
    const a = parseCidr('10.0.0.0/20')!;
    expect(cidrsOverlap(a, parseCidr('10.0.8.0/21')!)).toBe(true);
    expect(cidrsOverlap(a, parseCidr('10.0.16.0/20')!)).toBe(false);
  });
  it('agrees with address membership', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), (x, y) => {
        const a = parseCidr(`10.${x}.0.0/16`)!;
        const b = parseCidr(`10.${y}.0.0/16`)!;
        expect(cidrsOverlap(a, b)).toBe(x === y);
      }),
    );
  });
});
