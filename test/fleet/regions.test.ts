import { availabilityZoneProblems } from '../../lib/fleet';

describe('availabilityZoneProblems', () => {
  it('accepts zones of the region', () => {
    expect(availabilityZoneProblems('us-east-1', ['us-east-1a', 'us-east-1f'])).toEqual([]);
  });
  it('names the valid zones when one is wrong', () => {
    expect(availabilityZoneProblems('eu-west-1', ['eu-west-1a', 'eu-west-1d'])).toEqual([
      expect.stringContaining('valid zones are eu-west-1a, eu-west-1b, eu-west-1c'),
    ]);
  });
  it('rejects duplicates and unknown regions', () => {
    expect(availabilityZoneProblems('eu-west-1', ['eu-west-1a', 'eu-west-1a'])).toEqual([expect.stringContaining('listed twice')]);
    expect(availabilityZoneProblems('xx-1', ['xx-1a', 'xx-1b'])[0]).toContain('unknown region');
  });
});
