import { Price, PriceTable } from './prices';

/** A Price List API query (`pricing:GetProducts`) for one price id in one region. */
export interface PriceQuery {
  readonly serviceCode: string;
  /**
   * Field → value. `usagetype` is matched on the answers, as the value or `<region prefix>-<value>`
   * (`EUW1-NatGateway-Hours`); the others are the call's TERM_MATCH filters, with `regionCode`.
   */
  readonly filters: Readonly<Record<string, string>>;
  /** What one unit of the table is in the API's units (1e6 for a price per million requests). */
  readonly scale?: number;
  /** The API prices this per hour and the table per month (dashboards). */
  readonly hourlyToMonthly?: boolean;
  /** A global service: queried without a region. */
  readonly global?: boolean;
}

const RDS_ENGINES: Readonly<Record<string, string>> = {
  'aurora-postgresql': 'Aurora PostgreSQL',
  'aurora-mysql': 'Aurora MySQL',
  postgres: 'PostgreSQL',
  mysql: 'MySQL',
};

/** The usage types the table's fixed ids match (`<prefix>-<usagetype>` in most regions; matched as the part after it). */
const BY_USAGE: Readonly<Record<string, PriceQuery>> = {
  'nat-gateway-hour': { serviceCode: 'AmazonEC2', filters: { productFamily: 'NAT Gateway', group: 'NGW:NatGateway', usagetype: 'NatGateway-Hours' } },
  'nat-gateway-gb': { serviceCode: 'AmazonEC2', filters: { productFamily: 'NAT Gateway', usagetype: 'NatGateway-Bytes' } },
  'public-ipv4-hour': { serviceCode: 'AmazonVPC', filters: { usagetype: 'PublicIPv4:InUseAddress' } },
  'interface-endpoint-az-hour': { serviceCode: 'AmazonVPC', filters: { usagetype: 'VpcEndpoint-Hours' } },
  'interface-endpoint-gb': { serviceCode: 'AmazonVPC', filters: { usagetype: 'VpcEndpoint-Bytes' } },
  'alb-hour': { serviceCode: 'AWSELB', filters: { productFamily: 'Load Balancer-Application', usagetype: 'LoadBalancerUsage' } },
  'alb-lcu-hour': { serviceCode: 'AWSELB', filters: { productFamily: 'Load Balancer-Application', usagetype: 'LCUUsage' } },
  'nlb-hour': { serviceCode: 'AWSELB', filters: { productFamily: 'Load Balancer-Network', usagetype: 'LoadBalancerUsage' } },
  'nlb-lcu-hour': { serviceCode: 'AWSELB', filters: { productFamily: 'Load Balancer-Network', usagetype: 'LCUUsage' } },
  'fargate-vcpu-hour': { serviceCode: 'AmazonECS', filters: { usagetype: 'Fargate-vCPU-Hours:perCPU' } },
  'fargate-gb-hour': { serviceCode: 'AmazonECS', filters: { usagetype: 'Fargate-GB-Hours' } },
  'fargate-arm-vcpu-hour': { serviceCode: 'AmazonECS', filters: { usagetype: 'Fargate-ARM-vCPU-Hours:perCPU' } },
  'fargate-arm-gb-hour': { serviceCode: 'AmazonECS', filters: { usagetype: 'Fargate-ARM-GB-Hours' } },
  'rds-storage-gp2-gb-month': {
    serviceCode: 'AmazonRDS',
    filters: { volumeType: 'General Purpose', databaseEngine: 'PostgreSQL', deploymentOption: 'Single-AZ' },
  },
  'rds-storage-gp3-gb-month': {
    serviceCode: 'AmazonRDS',
    filters: { volumeType: 'General Purpose-GP3', databaseEngine: 'PostgreSQL', deploymentOption: 'Single-AZ' },
  },
  'aurora-storage-gb-month': {
    serviceCode: 'AmazonRDS',
    filters: { productFamily: 'Database Storage', databaseEngine: 'Aurora PostgreSQL', usagetype: 'Aurora:StorageUsage' },
  },
  'aurora-io-million': {
    serviceCode: 'AmazonRDS',
    filters: { productFamily: 'System Operation', databaseEngine: 'Aurora PostgreSQL', usagetype: 'Aurora:StorageIOUsage' },
    scale: 1e6,
  },
  'kms-key-month': { serviceCode: 'awskms', filters: { usagetype: 'KMS-Keys' } },
  'cloudwatch-alarm-month': { serviceCode: 'AmazonCloudWatch', filters: { usagetype: 'CW:AlarmMonitorUsage' } },
  'cloudwatch-composite-alarm-month': { serviceCode: 'AmazonCloudWatch', filters: { usagetype: 'CW:CompositeAlarmMonitorUsage' } },
  'cloudwatch-dashboard-month': { serviceCode: 'AmazonCloudWatch', filters: { usagetype: 'DashboardsUsageHour-Basic' }, hourlyToMonthly: true },
  'logs-ingest-gb': { serviceCode: 'AmazonCloudWatch', filters: { usagetype: 'DataProcessing-Bytes' } },
  'waf-web-acl-month': { serviceCode: 'awswaf', filters: { usagetype: 'WebACLV2' } },
  'waf-rule-month': { serviceCode: 'awswaf', filters: { usagetype: 'RuleV2' } },
  'waf-requests-million': { serviceCode: 'awswaf', filters: { usagetype: 'RequestV2-Tier1' }, scale: 1e6 },
  'secret-month': { serviceCode: 'AWSSecretsManager', filters: { usagetype: 'AWSSecretsManager-Secrets' } },
  'hosted-zone-month': { serviceCode: 'AmazonRoute53', filters: { usagetype: 'HostedZone' }, global: true },
  'ssm-advanced-parameter-month': { serviceCode: 'AWSSystemsManager', filters: { usagetype: 'PS-Advanced-Param-Tier1' } },
  'sqs-requests-million': { serviceCode: 'AWSQueueService', filters: { usagetype: 'Requests-Tier1' }, scale: 1e6 },
  'cross-az-gb': { serviceCode: 'AWSDataTransfer', filters: { transferType: 'IntraRegion' } },
  'dynamodb-write-million': { serviceCode: 'AmazonDynamoDB', filters: { usagetype: 'WriteRequestUnits' }, scale: 1e6 },
  'dynamodb-read-million': { serviceCode: 'AmazonDynamoDB', filters: { usagetype: 'ReadRequestUnits' }, scale: 1e6 },
  'codepipeline-v1-month': { serviceCode: 'AWSCodePipeline', filters: { usagetype: 'activePipeline' } },
};

/** The query for a price id, including the per-type ids (`ec2-hour:t3.medium`, `rds-hour:postgres:db.t4g.medium`). */
export function priceQuery(id: string): PriceQuery | undefined {
  const ec2 = /^ec2-hour:(.+)$/.exec(id);
  if (ec2) {
    return {
      serviceCode: 'AmazonEC2',
      filters: {
        instanceType: ec2[1],
        operatingSystem: 'Linux',
        tenancy: 'Shared',
        preInstalledSw: 'NA',
        capacitystatus: 'Used',
        licenseModel: 'No License required',
      },
    };
  }
  const rds = /^rds-hour:([a-z-]+):(db\..+)$/.exec(id);
  if (rds) {
    const engine = RDS_ENGINES[rds[1]];
    return engine
      ? { serviceCode: 'AmazonRDS', filters: { instanceType: rds[2], databaseEngine: engine, deploymentOption: 'Single-AZ' } }
      : undefined;
  }
  return BY_USAGE[id];
}

interface PriceListItem {
  readonly product?: { readonly attributes?: Record<string, string> };
  readonly terms?: {
    readonly OnDemand?: Record<
      string,
      {
        readonly priceDimensions?: Record<
          string,
          { readonly pricePerUnit?: { readonly USD?: string }; readonly beginRange?: string; readonly unit?: string }
        >;
      }
    >;
  };
}

/**
 * The on-demand dollars of one Price List item (a GetProducts `PriceList` entry, a JSON string):
 * the first paid tier (a free tier's 0 is skipped), or undefined when it has none.
 */
export function onDemandUsd(item: string): number | undefined {
  const parsed = JSON.parse(item) as PriceListItem;
  const dimensions = Object.values(parsed.terms?.OnDemand ?? {}).flatMap((t) => Object.values(t.priceDimensions ?? {}));
  const paid = dimensions
    .map((d) => ({ usd: Number(d.pricePerUnit?.USD), begin: Number(d.beginRange ?? 0) }))
    .filter((d) => Number.isFinite(d.usd) && d.usd > 0)
    .sort((a, b) => a.begin - b.begin);
  return paid[0]?.usd;
}

/** Answers a query in a region with the PriceList items GetProducts returned (all pages). */
export type PriceListFetch = (query: PriceQuery, region: string) => Promise<readonly string[]>;

export interface RefreshResult {
  readonly table: PriceTable;
  /** `region id: old → new` for each price that changed. */
  readonly changed: readonly string[];
  /** Ids the API did not answer (kept as they were), each with why. */
  readonly kept: readonly string[];
}

/**
 * A new table: every price id of `regions` (added regions take the ids of the table's first) read
 * from the Price List API, with its offer as the source and `today` as the day. A price the API
 * does not answer (or answers with more than one distinct figure) keeps its entry and is reported.
 */
export async function refreshPriceTable(
  table: PriceTable,
  regions: readonly string[],
  fetchPrices: PriceListFetch,
  today: string,
): Promise<RefreshResult> {
  const template = Object.keys(table.prices[Object.keys(table.prices)[0]] ?? {});
  const prices: Record<string, Record<string, Price>> = Object.fromEntries(Object.entries(table.prices).map(([r, p]) => [r, { ...p }]));
  const changed: string[] = [];
  const kept: string[] = [];
  for (const region of regions) {
    const entries = (prices[region] ??= {});
    const ids = [...new Set([...template, ...Object.keys(entries)])].sort();
    for (const id of ids) {
      const query = priceQuery(id);
      if (!query) {
        kept.push(`${region} ${id}: no Price List query is known for it (lib/domain/cost/price-list.ts)`);
        continue;
      }
      const usage = query.filters.usagetype;
      const items = (await fetchPrices(query, region)).filter((i) => {
        if (!usage) return true;
        const type = (JSON.parse(i) as PriceListItem).product?.attributes?.usagetype ?? '';
        return type === usage || type.endsWith(`-${usage}`);
      });
      const figures = [...new Set(items.map(onDemandUsd).filter((x): x is number => x !== undefined))];
      if (figures.length !== 1) {
        kept.push(
          `${region} ${id}: the API answered ${figures.length === 0 ? 'no on-demand price' : `${figures.length} different prices (${figures.join(', ')})`}; the entry is kept`,
        );
        continue;
      }
      const usd = +(figures[0] * (query.scale ?? 1) * (query.hourlyToMonthly ? table.hoursPerMonth : 1)).toPrecision(6);
      const before = entries[id];
      const unit = before?.unit ?? prices[Object.keys(table.prices)[0]]?.[id]?.unit ?? 'unit';
      if (before?.usd !== usd) changed.push(`${region} ${id}: ${before ? `$${before.usd}` : 'none'} → $${usd}`);
      entries[id] = {
        usd,
        unit,
        source: `https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/${query.serviceCode}/current/${query.global ? 'index' : `${region}/index`}.json`,
        asOf: today,
        method: 'price-list-api',
      };
    }
  }
  return { table: { ...table, prices }, changed, kept };
}
