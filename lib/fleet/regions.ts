/**
 * Availability Zone suffixes per region, so configs are checked offline (no EC2 lookup).
 * Source: AWS regional documentation; extend when a new region is needed.
 */
export const KNOWN_REGIONS: Readonly<Record<string, string>> = {
  'us-east-1': 'abcdef',
  'us-east-2': 'abc',
  'us-west-1': 'abc',
  'us-west-2': 'abcd',
  'ca-central-1': 'abd',
  'sa-east-1': 'abc',
  'eu-west-1': 'abc',
  'eu-west-2': 'abc',
  'eu-west-3': 'abc',
  'eu-central-1': 'abc',
  'eu-central-2': 'abc',
  'eu-north-1': 'abc',
  'eu-south-1': 'abc',
  'eu-south-2': 'abc',
  'ap-south-1': 'abc',
  'ap-southeast-1': 'abc',
  'ap-southeast-2': 'abc',
  'ap-northeast-1': 'acd',
  'ap-northeast-2': 'abcd',
  'ap-northeast-3': 'abc',
  'me-central-1': 'abc',
  'af-south-1': 'abc',
};

/** Problems with one region's AZ list; empty when it is valid. */
export function availabilityZoneProblems(region: string, zones: readonly string[]): string[] {
  const letters = KNOWN_REGIONS[region];
  if (letters === undefined) {
    return [`region \`${region}\`: unknown region; use one of ${Object.keys(KNOWN_REGIONS).join(', ')}`];
  }
  const problems: string[] = [];
  if (zones.length < 2) {
    problems.push(`region \`${region}\`: ${zones.length} Availability Zone(s); list at least 2 so every cell spans two AZs`);
  }
  for (const zone of zones) {
    const suffix = zone.startsWith(region) ? zone.slice(region.length) : '';
    if (suffix.length !== 1 || !letters.includes(suffix)) {
      problems.push(
        `region \`${region}\`: Availability Zone \`${zone}\` is not in this region; valid zones are ${[...letters].map((l) => region + l).join(', ')}`,
      );
    }
  }
  if (new Set(zones).size !== zones.length) {
    problems.push(`region \`${region}\`: Availability Zones are listed twice; list each once`);
  }
  return problems;
}
