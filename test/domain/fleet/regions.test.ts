import { availabilityZoneIds, availabilityZoneProblems, KNOWN_REGIONS, unknownRegionProblem } from '../../../lib/domain/fleet';

describe('availabilityZoneProblems', () => {
  it('accepts AZ IDs of the region', () => {
    expect(availabilityZoneProblems('us-east-1', ['use1-az1', 'use1-az6'])).toEqual([]);
  });
  it('refuses AZ names, which differ between the router and cell accounts, naming the IDs to use', () => {
    expect(availabilityZoneProblems('us-east-1', ['us-east-1a', 'use1-az2'])).toEqual([
      expect.stringMatching(
        /`us-east-1a` is an Availability Zone name, which maps to a different zone in each account; list AZ IDs .*: use1-az1, use1-az2/,
      ),
    ]);
  });
  it('names the valid zones when one is wrong', () => {
    expect(availabilityZoneProblems('eu-west-1', ['euw1-az1', 'euw1-az4'])).toEqual([
      expect.stringContaining('valid zones are euw1-az1, euw1-az2, euw1-az3'),
    ]);
  });
  it('rejects duplicates', () => {
    expect(availabilityZoneProblems('eu-west-1', ['euw1-az1', 'euw1-az1'])).toEqual([expect.stringContaining('listed twice')]);
  });
  it('refuses a region outside the table, saying where the table comes from and how to add a row', () => {
    for (const region of ['xx-1', 'us-gov-west-1', 'cn-north-1']) {
      const problems = availabilityZoneProblems(region, [`${region}a`, `${region}b`]);
      expect(problems).toEqual([unknownRegionProblem(region)]);
      expect(problems[0]).toContain(`region \`${region}\`: unknown region, not in the AZ-ID table (lib/domain/fleet/regions.ts`);
      expect(problems[0]).toContain(
        'add its row to KNOWN_REGIONS from https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html',
      );
      expect(problems[0]).toContain(`aws ec2 describe-availability-zones --region ${region} --query 'AvailabilityZones[].ZoneId'`);
      expect(problems[0]).toContain('eu-west-1, eu-west-2');
    }
  });
});

describe('KNOWN_REGIONS (the AWS Availability Zones page, region by region)', () => {
  const rows = Object.entries(KNOWN_REGIONS);

  it('has a well-formed row per region: region code, a prefix of its own, at least three distinct zones in order', () => {
    expect(rows.length).toBeGreaterThanOrEqual(30);
    const prefixes = new Set<string>();
    for (const [region, { prefix, zones }] of rows) {
      expect(region).toMatch(/^[a-z]{2}-[a-z]+-\d$/);
      // The AZ-ID prefix: the region's letters, then its number (use1, apse2, mxc1).
      expect(prefix).toMatch(/^[a-z]{3,5}\d$/);
      expect(prefix.slice(0, 2)).toBe(region.slice(0, 2));
      expect(prefix.at(-1)).toBe(region.at(-1));
      expect(prefixes.has(prefix)).toBe(false);
      prefixes.add(prefix);
      // "Each Region has at least three Availability Zones."
      expect(zones.length).toBeGreaterThanOrEqual(3);
      expect([...zones].sort((a, b) => a - b)).toEqual(zones);
      expect(new Set(zones).size).toBe(zones.length);
      for (const n of zones) expect(Number.isInteger(n) && n >= 1).toBe(true);
      expect(availabilityZoneIds(region)).toEqual(zones.map((n) => `${prefix}-az${n}`));
      expect(availabilityZoneProblems(region, availabilityZoneIds(region))).toEqual([]);
    }
  });

  it('keeps the rows corrected against the page', () => {
    // The page lists four zones in London and Tokyo, three in N. California (newer accounts get two),
    // and no cac1-az3.
    expect(availabilityZoneIds('eu-west-2')).toEqual(['euw2-az1', 'euw2-az2', 'euw2-az3', 'euw2-az4']);
    expect(availabilityZoneIds('ap-northeast-1')).toEqual(['apne1-az1', 'apne1-az2', 'apne1-az3', 'apne1-az4']);
    expect(availabilityZoneIds('us-west-1')).toEqual(['usw1-az1', 'usw1-az2', 'usw1-az3']);
    expect(availabilityZoneIds('ca-central-1')).toEqual(['cac1-az1', 'cac1-az2', 'cac1-az4']);
    expect(availabilityZoneIds('us-east-1')).toEqual(['use1-az1', 'use1-az2', 'use1-az3', 'use1-az4', 'use1-az5', 'use1-az6']);
  });
});
