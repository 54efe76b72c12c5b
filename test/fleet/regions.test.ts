import { availabilityZoneProblems } from '../../lib/fleet';

describe('availabilityZoneProblems', () => {
  it('accepts AZ IDs of the region', () => {
    expect(availabilityZoneProblems('us-east-1', ['use1-az1', 'use1-az6'])).toEqual([]);
  });
  it('refuses AZ names, which differ between the router and cell accounts, naming the IDs to use', () => {
    expect(availabilityZoneProblems('us-east-1', ['us-east-1a', 'use1-az2'])).toEqual([
      expect.stringMatching(/`us-east-1a` is an Availability Zone name, which maps to a different zone in each account; list AZ IDs .*: use1-az1, use1-az2/),
    ]);
  });
  it('names the valid zones when one is wrong', () => {
    expect(availabilityZoneProblems('eu-west-1', ['euw1-az1', 'euw1-az4'])).toEqual([
      expect.stringContaining('valid zones are euw1-az1, euw1-az2, euw1-az3'),
    ]);
  });
  it('rejects duplicates and unknown regions', () => {
    expect(availabilityZoneProblems('eu-west-1', ['euw1-az1', 'euw1-az1'])).toEqual([expect.stringContaining('listed twice')]);
    expect(availabilityZoneProblems('xx-1', ['xx-1a', 'xx-1b'])[0]).toContain('unknown region');
  });
});
