import { REGION_PARTITION_PREFIXES } from '../../domain/fleet/regions';

/* Shell helpers of the pipeline's stage scripts and of `cellctl protect`: no CDK here, so the CLI can load them. */

/** `s` as one single-quoted shell word. */
export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A shell function `stage_partition REGION` that prints the AWS partition of a region, for the ARNs
 * the stage scripts build (`arn:<partition>:iam::…`): China regions are `aws-cn`, GovCloud
 * `aws-us-gov`, the ISO regions their own, every other region `aws`.
 */
export function partitionFunction(): string[] {
  return [
    'stage_partition() {',
    '  case "$1" in',
    ...REGION_PARTITION_PREFIXES.map(([prefix, partition]) => `    ${prefix}*) echo ${partition} ;;`),
    '    *) echo aws ;;',
    '  esac',
    '}',
  ];
}
