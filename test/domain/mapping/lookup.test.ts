import fc from 'fast-check';
import { bucketOf, compileMapping, InvalidKeyError, lookup, lookupMany, pinKey, setPrefix } from '../../../lib/domain/mapping';
import { NOW, sampleMapping } from '../../support/mapping';

const keyArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,40}$/);

describe('lookup', () => {
  const base = sampleMapping(4);
  const doc = setPrefix(setPrefix(pinKey(base, 'tenant-42', 'cell-3', NOW), 'internal-eu-', 'cell-2', NOW), 'vip', 'cell-4', NOW);

  it('routes by bucket range when no override matches', () => {
    fc.assert(
      fc.property(
        keyArb.filter((k) => !k.startsWith('internal-') && !k.startsWith('vip') && k !== 'tenant-42'),
        (key) => {
          const result = lookup(doc, key);
          const bucket = bucketOf(key, doc.bucketCount);
          const range = doc.buckets.find((r) => r.from <= bucket && bucket <= r.to)!;
          expect(result).toEqual({ key, bucket, cell: range.cell, via: 'bucket' });
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('checks exact overrides first', () => {
    expect(lookup(doc, 'tenant-42')).toMatchObject({ cell: 'cell-3', via: 'exact', bucket: bucketOf('tenant-42', 16384) });
  });

  it('uses the longest matching prefix', () => {
    expect(lookup(doc, 'internal-us-1')).toMatchObject({ cell: 'canary', via: 'prefix' });
    expect(lookup(doc, 'internal-eu-7')).toMatchObject({ cell: 'cell-2', via: 'prefix' });
    expect(lookup(doc, 'vipx')).toMatchObject({ cell: 'cell-4', via: 'prefix' });
    expect(lookup(doc, 'vi')).toMatchObject({ via: 'bucket' });
  });

  it('prefers an exact pin over a matching prefix', () => {
    const pinned = pinKey(doc, 'internal-eu-9', 'cell-1', NOW);
    expect(lookup(pinned, 'internal-eu-9')).toMatchObject({ cell: 'cell-1', via: 'exact' });
  });

  it.each(['', 'bad key', '-x', 'x'.repeat(129)])('rejects invalid key %j', (key) => {
    expect(() => lookup(doc, key)).toThrow(InvalidKeyError);
  });

  it('gives the same answers compiled or not', () => {
    const compiled = compileMapping(doc);
    fc.assert(
      fc.property(keyArb, (key) => expect(compiled.lookup(key)).toEqual(lookup(doc, key))),
      { numRuns: 500 },
    );
  });

  it('lookupMany answers like lookup, key by key, whatever the batch size', () => {
    const anyKey = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/);
    fc.assert(
      fc.property(fc.array(fc.oneof(keyArb, anyKey, fc.constantFrom('tenant-42', 'internal-eu-1', 'vip-7')), { maxLength: 2100 }), (keys) => {
        expect(lookupMany(doc, keys)).toEqual(keys.map((key) => lookup(doc, key)));
      }),
      { numRuns: 30 },
    );
  });

  it('lookupMany names the first invalid key and routes none', () => {
    expect(() => lookupMany(doc, ['tenant-1', 'tenant-2', 'bad key'])).toThrow(
      new InvalidKeyError('key 3 of 3: key `bad key` must match ^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$'),
    );
  });
});
