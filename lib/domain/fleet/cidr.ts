/** IPv4 CIDR blocks as integer ranges, for overlap checks. */
export interface CidrRange {
  readonly first: number;
  readonly last: number;
  readonly prefix: number;
}

/** Parses `a.b.c.d/p`; returns undefined when it is not a canonical IPv4 CIDR. */
export function parseCidr(cidr: string): CidrRange | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((o) => o > 255) || prefix > 32) return undefined;
  const address = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  if (address % size !== 0) return undefined; // host bits set: not the network address
  return { first: address, last: address + size - 1, prefix };
}

export function cidrsOverlap(a: CidrRange, b: CidrRange): boolean {
  return a.first <= b.last && b.first <= a.last;
}
