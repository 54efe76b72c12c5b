import { initialZones, parseZones, undrainSteps, validateZones, withZoneWeight, zoneShares } from '../../../lib/domain/zones';

const ZONES = ['use1-az1', 'use1-az2', 'use1-az4'];
const NOW = '2026-12-03T16:00:00.000Z';

describe('the zones document', () => {
  const doc = initialZones('us-east-1', ZONES, NOW);

  it('starts every zone at its full share, and is valid', () => {
    expect(doc).toEqual({
      schemaVersion: 1,
      region: 'us-east-1',
      version: 1,
      updatedAt: NOW,
      zones: { 'use1-az1': { weight: 100 }, 'use1-az2': { weight: 100 }, 'use1-az4': { weight: 100 } },
    });
    expect(validateZones(doc, { region: 'us-east-1', knownZones: ZONES })).toEqual([]);
  });

  it.each([
    ['not JSON', '{', /not valid JSON/],
    ['a zone name, not an AZ ID', JSON.stringify({ ...doc, zones: { 'us-east-1a': { weight: 0 } } }), /not an AZ ID/],
    ['a weight above 100', JSON.stringify({ ...doc, zones: { 'use1-az1': { weight: 150 } } }), /whole percent from 0/],
    ['a fractional weight', JSON.stringify({ ...doc, zones: { 'use1-az1': { weight: 0.5 } } }), /whole percent from 0/],
    ['every zone drained', JSON.stringify({ ...doc, zones: Object.fromEntries(ZONES.map((z) => [z, { weight: 0 }])) }), /every zone is drained/],
    ['no version', JSON.stringify({ ...doc, version: 0 }), /\$\.version/],
    ['another schema', JSON.stringify({ ...doc, schemaVersion: 2 }), /schemaVersion 1/],
  ])('refuses %s, saying what to fix', (_, text, message) => {
    const parsed = parseZones(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problems.map((p) => `${p.path}: ${p.message}`).join('\n')).toMatch(message);
  });

  it("refuses another region's document and a zone the reader does not know", () => {
    expect(validateZones(doc, { region: 'eu-west-1' })[0].message).toMatch(/for us-east-1, this is eu-west-1/);
    const other = { ...doc, zones: { ...doc.zones, 'use1-az9': { weight: 100 } } };
    expect(validateZones(other, { knownZones: ZONES })[0].message).toMatch(/not one of this region's zones/);
  });

  it('counts a zone the document leaves out as serving: draining the two it lists is not draining all', () => {
    const two = { ...doc, zones: { 'use1-az1': { weight: 0 }, 'use1-az2': { weight: 0 } } };
    expect(validateZones(two, { knownZones: ZONES })).toEqual([]);
    expect(validateZones(two)[0].message).toMatch(/every zone is drained/);
  });

  it('drains a zone with the version raised, and refuses draining the last zone serving', () => {
    const drained = withZoneWeight(doc, 'use1-az2', 0, { zones: ZONES, reason: 'packet loss', now: NOW });
    expect(drained.version).toBe(2);
    expect(drained.zones['use1-az2']).toEqual({ weight: 0, since: NOW, reason: 'packet loss' });
    const two = withZoneWeight(drained, 'use1-az1', 0, { zones: ZONES, now: NOW });
    expect(() => withZoneWeight(two, 'use1-az4', 0, { zones: ZONES, now: NOW })).toThrow(/every zone is drained/);
    expect(() => withZoneWeight(doc, 'use1-az3', 0, { zones: ZONES })).toThrow(/not one of us-east-1's zones/);
  });

  it('gives the survivors of a drained zone N/(N-1) of their share', () => {
    const shares = zoneShares(withZoneWeight(doc, 'use1-az2', 0, { zones: ZONES, now: NOW }), ZONES);
    expect([...shares.values()]).toEqual([0.5, 0, 0.5]);
    expect([...zoneShares(doc, ZONES).values()].map((s) => s.toFixed(3))).toEqual(['0.333', '0.333', '0.333']);
  });

  it('steps an undrain through rising weights above the current one, ending at 100', () => {
    expect(undrainSteps(0)).toEqual([1, 5, 25, 50, 100]);
    expect(undrainSteps(25)).toEqual([50, 100]);
    expect(undrainSteps(0, [1, 2, 3, 100])).toEqual([1, 2, 3, 100]);
    expect(() => undrainSteps(0, [5, 1, 100])).toThrow(/must rise/);
    expect(() => undrainSteps(0, [1, 50])).toThrow(/must end at 100/);
    expect(() => undrainSteps(0, [0, 100])).toThrow(/whole percent from 1/);
  });
});
