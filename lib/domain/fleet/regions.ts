/**
 * Availability Zone IDs per region, so configs are checked offline (no EC2 lookup). Zones are placed
 * by AZ ID (`use1-az1`), never by name: a name such as `us-east-1a` maps to a different physical zone
 * in each account in the older regions, and the routers (router account) must put their interface
 * endpoints in zones the cells' endpoint services (cell accounts) serve. AZ IDs are the same in every
 * account ("AZ IDs", https://docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html).
 *
 * Source, row by row: the tables of "AWS Availability Zones" in the AWS Regions and Availability
 * Zones guide, https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html
 * (compared zone by zone in November 2026; every region there is here, with every AZ ID it lists).
 * Not every account can use every zone listed: the page's "Constrained Availability Zones" says a
 * constrained zone can be withheld from new accounts, and newer accounts get two of us-west-1's
 * three zones. A deploy into a zone an account lacks fails at the subnet; `aws ec2
 * describe-availability-zones --region R --query 'AvailabilityZones[].ZoneId'` in the router and
 * cell accounts shows which are usable. Regions absent from that page (GovCloud, China, ones
 * announced later) are refused until a row is added here from the page; see `unknownRegionProblem`.
 */
export const KNOWN_REGIONS: Readonly<Record<string, { readonly prefix: string; readonly zones: readonly number[] }>> = {
  // North America
  'us-east-1': { prefix: 'use1', zones: [1, 2, 3, 4, 5, 6] },
  'us-east-2': { prefix: 'use2', zones: [1, 2, 3] },
  'us-west-1': { prefix: 'usw1', zones: [1, 2, 3] },
  'us-west-2': { prefix: 'usw2', zones: [1, 2, 3, 4] },
  'ca-central-1': { prefix: 'cac1', zones: [1, 2, 4] },
  'ca-west-1': { prefix: 'caw1', zones: [1, 2, 3] },
  'mx-central-1': { prefix: 'mxc1', zones: [1, 2, 3] },
  // Africa
  'af-south-1': { prefix: 'afs1', zones: [1, 2, 3] },
  // Asia Pacific
  'ap-east-1': { prefix: 'ape1', zones: [1, 2, 3] },
  'ap-east-2': { prefix: 'ape2', zones: [1, 2, 3] },
  'ap-northeast-1': { prefix: 'apne1', zones: [1, 2, 3, 4] },
  'ap-northeast-2': { prefix: 'apne2', zones: [1, 2, 3, 4] },
  'ap-northeast-3': { prefix: 'apne3', zones: [1, 2, 3] },
  'ap-south-1': { prefix: 'aps1', zones: [1, 2, 3] },
  'ap-south-2': { prefix: 'aps2', zones: [1, 2, 3] },
  'ap-southeast-1': { prefix: 'apse1', zones: [1, 2, 3] },
  'ap-southeast-2': { prefix: 'apse2', zones: [1, 2, 3] },
  'ap-southeast-3': { prefix: 'apse3', zones: [1, 2, 3] },
  'ap-southeast-4': { prefix: 'apse4', zones: [1, 2, 3] },
  'ap-southeast-5': { prefix: 'apse5', zones: [1, 2, 3] },
  'ap-southeast-6': { prefix: 'apse6', zones: [1, 2, 3] },
  'ap-southeast-7': { prefix: 'apse7', zones: [1, 2, 3] },
  // Europe
  'eu-central-1': { prefix: 'euc1', zones: [1, 2, 3] },
  'eu-central-2': { prefix: 'euc2', zones: [1, 2, 3] },
  'eu-north-1': { prefix: 'eun1', zones: [1, 2, 3] },
  'eu-south-1': { prefix: 'eus1', zones: [1, 2, 3] },
  'eu-south-2': { prefix: 'eus2', zones: [1, 2, 3] },
  'eu-west-1': { prefix: 'euw1', zones: [1, 2, 3] },
  'eu-west-2': { prefix: 'euw2', zones: [1, 2, 3, 4] },
  'eu-west-3': { prefix: 'euw3', zones: [1, 2, 3] },
  // Middle East
  'il-central-1': { prefix: 'ilc1', zones: [1, 2, 3] },
  'me-central-1': { prefix: 'mec1', zones: [1, 2, 3] },
  'me-south-1': { prefix: 'mes1', zones: [1, 2, 3] },
  // South America
  'sa-east-1': { prefix: 'sae1', zones: [1, 2, 3] },
};

/** The AZ IDs of a known region, for example `euw1-az1, euw1-az2, euw1-az3`. */
export function availabilityZoneIds(region: string): string[] {
  const known = KNOWN_REGIONS[region];
  return known ? known.zones.map((n) => `${known.prefix}-az${n}`) : [];
}

/** Problems with one region's AZ list; empty when it is valid. */
export function availabilityZoneProblems(region: string, zones: readonly string[]): string[] {
  if (KNOWN_REGIONS[region] === undefined) return [unknownRegionProblem(region)];
  const valid = availabilityZoneIds(region);
  const problems: string[] = [];
  if (zones.length < 2) {
    problems.push(`region \`${region}\`: ${zones.length} Availability Zone(s); list at least 2 so every cell spans two AZs`);
  }
  for (const zone of zones) {
    if (valid.includes(zone)) continue;
    problems.push(
      zone.startsWith(region)
        ? `region \`${region}\`: \`${zone}\` is an Availability Zone name, which maps to a different zone in each account; list AZ IDs (the same in every account): ${valid.join(', ')}`
        : `region \`${region}\`: Availability Zone \`${zone}\` is not in this region; valid zones are ${valid.join(', ')}`,
    );
  }
  if (new Set(zones).size !== zones.length) {
    problems.push(`region \`${region}\`: Availability Zones are listed twice; list each once`);
  }
  return problems;
}

/** Why a region outside the table is refused, and how to add it. */
/** The AWS partitions a fleet may live in: ARNs name theirs (`arn:<partition>:…`), and one fleet is in one partition. */
export const PARTITIONS = ['aws', 'aws-cn', 'aws-us-gov'] as const;
export type Partition = (typeof PARTITIONS)[number];

/**
 * The partition a region belongs to, by its name (as AWS names regions): China regions are
 * `aws-cn`, GovCloud `aws-us-gov`, the ISO regions their own, every other region `aws`. The stage
 * scripts' `stage_partition` (lib/constructs/pipeline/protect.ts) is made from the same table.
 */
export function regionPartition(region: string): string {
  return REGION_PARTITION_PREFIXES.find(([prefix]) => region.startsWith(prefix))?.[1] ?? 'aws';
}

/** Region name prefixes of the partitions other than `aws`, most specific first (`regionPartition`). */
export const REGION_PARTITION_PREFIXES: readonly (readonly [prefix: string, partition: string])[] = [
  ['cn-', 'aws-cn'],
  ['us-gov-', 'aws-us-gov'],
  ['us-isob-', 'aws-iso-b'],
  ['us-iso-', 'aws-iso'],
  ['eu-isoe-', 'aws-iso-e'],
];

export function unknownRegionProblem(region: string): string {
  return (
    `region \`${region}\`: unknown region, not in the AZ-ID table (lib/domain/fleet/regions.ts, taken from the AWS Availability Zones page). ` +
    `Known regions: ${Object.keys(KNOWN_REGIONS).join(', ')}. To add a region, add its row to KNOWN_REGIONS from ` +
    'https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html (its AZ IDs, e.g. `use1-az1`), ' +
    `and check them in each account with \`aws ec2 describe-availability-zones --region ${region} --query 'AvailabilityZones[].ZoneId'\``
  );
}
