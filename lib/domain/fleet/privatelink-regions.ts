/**
 * Regions where an interface endpoint can reach an endpoint service of another region (cross-region
 * PrivateLink): the cells' endpoint services list the router regions in `SupportedRegions`, and the
 * routers' endpoints name the cell's region in `ServiceRegion`. Both sides of a pair must be here.
 *
 * Source: AWS PrivateLink Guide, "Share your services through AWS PrivateLink", section "Cross-Region
 * access", https://docs.aws.amazon.com/vpc/latest/privatelink/privatelink-share-your-services.html#endpoint-service-cross-region
 * and the launch post "Introducing Cross-Region Connectivity for AWS PrivateLink" (AWS Networking &
 * Content Delivery blog, November 2024). The rows are the launch regions as recalled from that post:
 * the guide's section could not be read where this table was written, so it is listed under "Still
 * not verified" in docs/aws-behaviour.md; compare the page and correct the rows from it. Its list grows: add a
 * region's row here from the page.
 */
export const CROSS_REGION_PRIVATELINK_REGIONS: readonly string[] = [
  'us-east-1',
  'us-east-2',
  'us-west-2',
  'eu-west-1',
  'ap-southeast-1',
  'ap-northeast-1',
  'sa-east-1',
];

/** Why a fleet's regions cannot all reach each other's cells, one line per region outside the table; empty when they can. */
export function crossRegionProblems(regions: readonly string[]): string[] {
  if (regions.length < 2) return [];
  return regions
    .filter((r) => !CROSS_REGION_PRIVATELINK_REGIONS.includes(r))
    .map(
      (r) =>
        `region \`${r}\`: cross-region PrivateLink (every router reaches every cell of the fleet) is not offered in ${r}, so the routers of ${regions.filter((o) => o !== r).join(', ')} cannot reach its cells ` +
        `and its routers cannot reach theirs; use regions of ${CROSS_REGION_PRIVATELINK_REGIONS.join(', ')} (lib/domain/fleet/privatelink-regions.ts, from the PrivateLink Guide's "Cross-Region access"), or run this region as a fleet of its own`,
    );
}
