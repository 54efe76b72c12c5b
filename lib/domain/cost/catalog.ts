import { CfnTemplate } from '../limits';
import { Price, Prices } from './prices';

/** A resource as its template writes it, and where it is deployed. */
export interface PricedResource {
  readonly region: string;
  /** The stack (and nested stack) that holds it, as the assembly names it. */
  readonly stack: string;
  readonly logicalId: string;
  readonly type: string;
  readonly properties: Record<string, unknown>;
  /** Its template: a reference (`Ref`) is looked up in it. */
  readonly template: CfnTemplate;
}

/** A fixed monthly cost: what the resource costs while it exists, used or not. */
export interface CostLine {
  /** What a reader of the bill calls it: `NAT gateway`, `Fargate tasks`, … */
  readonly component: string;
  readonly stack: string;
  readonly logicalId: string;
  readonly type: string;
  readonly priceId: string;
  readonly price: Price;
  /** Units in a month (hours × count for an hourly price). */
  readonly quantity: number;
  readonly monthlyUsd: number;
  /** How the quantity was counted: `3 Availability Zones × 730 h`. */
  readonly counted: string;
  /** The cell a router's resource exists for (an interface endpoint to it): part of what adding that cell costs. */
  readonly forCell?: string;
}

/** A cost that grows with use: its unit price, and what drives it. */
export interface UsageDriver {
  readonly component: string;
  readonly stack: string;
  readonly logicalId: string;
  readonly type: string;
  readonly priceId: string;
  readonly price: Price;
  /** What one unit is counted from: `GB the endpoint carries`. */
  readonly drivenBy: string;
}

/** What one resource type costs, or why it costs nothing by itself. */
export type PricingRule =
  | { readonly kind: 'free'; readonly why: string }
  /** Billed by use only, at a few dollars a month for the whole fleet: named, not counted. */
  | { readonly kind: 'minor'; readonly why: string }
  | {
      readonly kind: 'priced';
      /** Its fixed monthly lines (none when it is billed only by use). */
      readonly fixed?: (r: PricedResource, p: Prices) => CostLine[];
      /** The prices its use is billed at, each with what drives it. */
      readonly usage?: readonly (readonly [priceId: string, drivenBy: string])[];
    };

/** A resource type of a stack that the catalog neither prices nor calls free. */
export class UnpricedTypeError extends Error {
  constructor(public readonly unpriced: readonly { readonly type: string; readonly stack: string; readonly logicalId: string }[]) {
    const byType = new Map<string, string[]>();
    for (const u of unpriced) byType.set(u.type, [...(byType.get(u.type) ?? []), `${u.stack}/${u.logicalId}`]);
    super(
      `${byType.size} resource type(s) the cost catalog does not know:\n` +
        [...byType].map(([type, at]) => `  - ${type} (${at.length}: ${at.slice(0, 3).join(', ')}${at.length > 3 ? ', …' : ''})`).join('\n') +
        '\nprice each in lib/domain/cost/catalog.ts (and its prices in lib/domain/cost/prices-table.ts), or declare it free with the reason (docs/cost.md)',
    );
    this.name = 'UnpricedTypeError';
  }
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined =>
  typeof v === 'number' ? v : typeof v === 'string' && /^\d+(\.\d+)?$/.test(v) ? Number(v) : undefined;

/** The resource a `{ Ref }` names in the same template. */
function referenced(r: PricedResource, value: unknown): { Type: string; Properties?: Record<string, unknown> } | undefined {
  const id = (value as { Ref?: unknown } | undefined)?.Ref;
  return typeof id === 'string' ? r.template.Resources?.[id] : undefined;
}

function line(r: PricedResource, p: Prices, component: string, priceId: string, units: number, counted: string): CostLine {
  const price = p.get(r.region, priceId, `${component}, ${r.stack}/${r.logicalId}`);
  return {
    component,
    stack: r.stack,
    logicalId: r.logicalId,
    type: r.type,
    priceId,
    price,
    quantity: units,
    monthlyUsd: units * price.usd,
    counted,
  };
}

const hourly = (r: PricedResource, p: Prices, component: string, priceId: string, count = 1, what = '') =>
  line(
    r,
    p,
    component,
    priceId,
    count * p.hoursPerMonth,
    `${count === 1 && !what ? '' : `${count}${what ? ` ${what}` : ''} × `}${p.hoursPerMonth} h`,
  );

const monthly = (r: PricedResource, p: Prices, component: string, priceId: string, count = 1, what = 'month') =>
  line(r, p, component, priceId, count, `${count} ${what}`);

/** How many subnets (one per zone) a load balancer or endpoint is placed in. */
const subnetCount = (props: Record<string, unknown>, key: string): number | undefined =>
  Array.isArray(props[key]) ? (props[key] as unknown[]).length : undefined;

/** Standard-resolution metrics an alarm evaluates: each MetricStat of a math alarm, else one. */
function alarmMetrics(props: Record<string, unknown>): number {
  const metrics = props.Metrics;
  if (!Array.isArray(metrics)) return 1;
  return Math.max(1, metrics.filter((m) => (m as { MetricStat?: unknown }).MetricStat !== undefined).length);
}

function fargateTasks(r: PricedResource, p: Prices): CostLine[] {
  const props = r.properties;
  const strategy = Array.isArray(props.CapacityProviderStrategy) ? (props.CapacityProviderStrategy as { CapacityProvider?: unknown }[]) : [];
  const fargate = props.LaunchType === 'FARGATE' || strategy.some((s) => /^FARGATE/.test(String(s.CapacityProvider)));
  // An EC2-backed service runs on its Auto Scaling group's instances, priced with the group.
  if (!fargate) return [];
  const task = referenced(r, props.TaskDefinition);
  const cpu = num(task?.Properties?.Cpu);
  const memory = num(task?.Properties?.Memory);
  if (cpu === undefined || memory === undefined) {
    throw new Error(`${r.stack}/${r.logicalId}: a Fargate service whose task definition's Cpu and Memory the cost estimate cannot read`);
  }
  const tasks = num(props.DesiredCount) ?? 1;
  const arm = (task?.Properties?.RuntimePlatform as { CpuArchitecture?: string } | undefined)?.CpuArchitecture === 'ARM64';
  const vcpu = cpu / 1024;
  const gb = memory / 1024;
  return [
    line(
      r,
      p,
      'Fargate tasks (vCPU)',
      arm ? 'fargate-arm-vcpu-hour' : 'fargate-vcpu-hour',
      tasks * vcpu * p.hoursPerMonth,
      `${tasks} tasks × ${vcpu} vCPU × ${p.hoursPerMonth} h`,
    ),
    line(
      r,
      p,
      'Fargate tasks (memory)',
      arm ? 'fargate-arm-gb-hour' : 'fargate-gb-hour',
      tasks * gb * p.hoursPerMonth,
      `${tasks} tasks × ${gb} GB × ${p.hoursPerMonth} h`,
    ),
  ];
}

function autoScalingGroup(r: PricedResource, p: Prices): CostLine[] {
  const props = r.properties;
  const count = num(props.DesiredCapacity) ?? num(props.MinSize) ?? 0;
  const template = referenced(r, (props.LaunchTemplate as { LaunchTemplateId?: unknown } | undefined)?.LaunchTemplateId);
  const type = str((template?.Properties?.LaunchTemplateData as { InstanceType?: unknown } | undefined)?.InstanceType);
  if (!type)
    throw new Error(`${r.stack}/${r.logicalId}: an Auto Scaling group whose instance type (its launch template's) the cost estimate cannot read`);
  return [hourly(r, p, `EC2 instances (${type})`, `ec2-hour:${type}`, count, 'instances')];
}

function dbInstance(r: PricedResource, p: Prices): CostLine[] {
  const props = r.properties;
  const cls = str(props.DBInstanceClass);
  let engine = str(props.Engine);
  const cluster = referenced(r, props.DBClusterIdentifier);
  engine ??= str(cluster?.Properties?.Engine);
  if (!cls || !engine) throw new Error(`${r.stack}/${r.logicalId}: a DB instance whose class and engine the cost estimate cannot read`);
  const multiAz = props.MultiAZ === true || props.MultiAZ === 'true';
  const copies = multiAz ? 2 : 1;
  const lines = [
    hourly(
      r,
      p,
      `Database instance (${engine} ${cls}${multiAz ? ', Multi-AZ' : ''})`,
      `rds-hour:${engine}:${cls}`,
      copies,
      multiAz ? 'copies (Multi-AZ)' : '',
    ),
  ];
  const storage = num(props.AllocatedStorage);
  if (storage !== undefined && !engine.startsWith('aurora')) {
    const kind = str(props.StorageType) ?? 'gp2';
    lines.push(
      monthly(r, p, `Database storage (${kind})`, `rds-storage-${kind}-gb-month`, storage * copies, `GB-month${multiAz ? ' × 2 (Multi-AZ)' : ''}`),
    );
  }
  return lines;
}

function webAcl(r: PricedResource, p: Prices): CostLine[] {
  const rules = Array.isArray(r.properties.Rules) ? r.properties.Rules.length : 0;
  return [monthly(r, p, 'WAF web ACL', 'waf-web-acl-month'), ...(rules ? [monthly(r, p, 'WAF rules', 'waf-rule-month', rules, 'rules')] : [])];
}

function loadBalancer(r: PricedResource, p: Prices): CostLine[] {
  const props = r.properties;
  const kind = props.Type === 'network' ? 'nlb' : props.Type === 'gateway' ? undefined : 'alb';
  if (!kind) throw new Error(`${r.stack}/${r.logicalId}: a Gateway Load Balancer, which the cost catalog does not price`);
  const lines = [hourly(r, p, kind === 'nlb' ? 'Network Load Balancer' : 'Application Load Balancer', `${kind}-hour`)];
  // An internet-facing load balancer holds a public IPv4 address in each of its zones.
  if (props.Scheme === 'internet-facing') {
    const zones = subnetCount(props, 'Subnets') ?? subnetCount(props, 'SubnetMappings') ?? 1;
    lines.push(hourly(r, p, 'Public IPv4 addresses', 'public-ipv4-hour', zones, 'zones'));
  }
  return lines;
}

function vpcEndpoint(r: PricedResource, p: Prices): CostLine[] {
  if ((r.properties.VpcEndpointType ?? 'Gateway') !== 'Interface') return [];
  const zones = subnetCount(r.properties, 'SubnetIds') ?? 1;
  // A router's link to a cell names the cell's service through the lookup that read it (CellId).
  const lookup = (r.properties.ServiceName as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
  const cell = typeof lookup === 'string' ? str(r.template.Resources?.[lookup]?.Properties?.CellId) : undefined;
  const l = hourly(r, p, 'Interface endpoints', 'interface-endpoint-az-hour', zones, 'Availability Zones');
  return [cell ? { ...l, forCell: cell } : l];
}

const FREE_IAM = 'IAM has no charge';
const FREE_NETWORK = 'VPC plumbing has no charge of its own';
const FREE_PART = 'a setting of a priced resource, no charge of its own';

/**
 * What each resource type the fleet's stacks deploy costs. A type that is neither here nor a
 * `Custom::` resource fails the estimate (UnpricedTypeError), so a new billable resource cannot
 * slip into a cell or router stack unpriced.
 */
export const CATALOG: Readonly<Record<string, PricingRule>> = {
  'AWS::EC2::NatGateway': {
    kind: 'priced',
    fixed: (r, p) => [hourly(r, p, 'NAT gateways', 'nat-gateway-hour')],
    usage: [['nat-gateway-gb', 'GB the NAT gateway processes (the workload’s calls to the internet and to AWS APIs without an endpoint)']],
  },
  'AWS::EC2::EIP': { kind: 'priced', fixed: (r, p) => [hourly(r, p, 'Public IPv4 addresses', 'public-ipv4-hour')] },
  'AWS::EC2::VPCEndpoint': {
    kind: 'priced',
    fixed: vpcEndpoint,
    usage: [['interface-endpoint-gb', 'GB an interface endpoint carries (a gateway endpoint has no charge)']],
  },
  'AWS::ElasticLoadBalancingV2::LoadBalancer': {
    kind: 'priced',
    fixed: loadBalancer,
    usage: [
      [
        'alb-lcu-hour',
        'LCU-hours of an Application Load Balancer: the largest of new connections/25 per s, active/3,000 per min, GB/h, rule evaluations/1,000 per s',
      ],
      ['nlb-lcu-hour', 'NLCU-hours of a Network Load Balancer: the largest of GB/h, new flows/800 per s, active flows/100,000'],
    ],
  },
  'AWS::ECS::Service': { kind: 'priced', fixed: fargateTasks },
  'AWS::AutoScaling::AutoScalingGroup': { kind: 'priced', fixed: autoScalingGroup },
  'AWS::RDS::DBInstance': { kind: 'priced', fixed: dbInstance },
  'AWS::RDS::DBCluster': {
    kind: 'priced',
    usage: [
      ['aurora-storage-gb-month', 'GB-months an Aurora cluster stores'],
      ['aurora-io-million', 'millions of I/O requests of an Aurora standard cluster'],
    ],
  },
  'AWS::KMS::Key': { kind: 'priced', fixed: (r, p) => [monthly(r, p, 'KMS keys', 'kms-key-month', 1, 'key')] },
  'AWS::CloudWatch::Alarm': {
    kind: 'priced',
    fixed: (r, p) => [monthly(r, p, 'CloudWatch alarms', 'cloudwatch-alarm-month', alarmMetrics(r.properties), 'alarm metrics')],
  },
  'AWS::CloudWatch::CompositeAlarm': {
    kind: 'priced',
    fixed: (r, p) => [monthly(r, p, 'CloudWatch composite alarms', 'cloudwatch-composite-alarm-month', 1, 'alarm')],
  },
  'AWS::CloudWatch::Dashboard': {
    kind: 'priced',
    fixed: (r, p) => [monthly(r, p, 'CloudWatch dashboards', 'cloudwatch-dashboard-month', 1, 'dashboard')],
  },
  // Target tracking makes two alarms of its own (one to scale out, one in), billed like any alarm.
  'AWS::ApplicationAutoScaling::ScalingPolicy': {
    kind: 'priced',
    fixed: (r, p) =>
      r.properties.PolicyType === 'TargetTrackingScaling'
        ? [monthly(r, p, 'CloudWatch alarms (target tracking)', 'cloudwatch-alarm-month', 2, 'alarms it creates')]
        : [],
  },
  'AWS::AutoScaling::ScalingPolicy': {
    kind: 'priced',
    fixed: (r, p) =>
      r.properties.PolicyType === 'TargetTrackingScaling'
        ? [monthly(r, p, 'CloudWatch alarms (target tracking)', 'cloudwatch-alarm-month', 2, 'alarms it creates')]
        : [],
  },
  'AWS::WAFv2::WebACL': { kind: 'priced', fixed: webAcl, usage: [['waf-requests-million', 'millions of requests the web ACL inspects']] },
  'AWS::SecretsManager::Secret': { kind: 'priced', fixed: (r, p) => [monthly(r, p, 'Secrets', 'secret-month', 1, 'secret')] },
  'AWS::Route53::HostedZone': { kind: 'priced', fixed: (r, p) => [monthly(r, p, 'Hosted zones', 'hosted-zone-month', 1, 'zone')] },
  'AWS::SSM::Parameter': {
    kind: 'priced',
    fixed: (r, p) => (r.properties.Tier === 'Advanced' ? [monthly(r, p, 'Advanced parameters', 'ssm-advanced-parameter-month', 1, 'parameter')] : []),
  },
  'AWS::DynamoDB::Table': {
    kind: 'priced',
    fixed: (r) => {
      if (r.properties.BillingMode !== 'PAY_PER_REQUEST') {
        throw new Error(`${r.stack}/${r.logicalId}: a provisioned DynamoDB table, which the cost catalog does not price yet (on-demand is)`);
      }
      return [];
    },
    usage: [
      ['dynamodb-write-million', 'millions of write request units (on-demand)'],
      ['dynamodb-read-million', 'millions of read request units (on-demand)'],
    ],
  },
  'AWS::SQS::Queue': { kind: 'priced', usage: [['sqs-requests-million', 'millions of queue requests (64 KB each)']] },
  'AWS::Logs::LogGroup': { kind: 'priced', usage: [['logs-ingest-gb', 'GB of logs ingested']] },
  'AWS::EC2::FlowLog': { kind: 'priced', usage: [['logs-ingest-gb', 'GB of flow-log records delivered (vended-log prices, tiered, at most this)']] },
  'AWS::CodePipeline::Pipeline': {
    kind: 'priced',
    fixed: (r, p) => (r.properties.PipelineType === 'V2' ? [] : [monthly(r, p, 'Pipeline (V1)', 'codepipeline-v1-month', 1, 'active pipeline')]),
  },
  // Billed by use only, at prices this estimate does not count: a few dollars a month at the fleet's rates.
  'AWS::S3::Bucket': { kind: 'minor', why: 'billed by storage and requests only: logs and mapping documents, a few dollars a month' },
  'AWS::SNS::Topic': { kind: 'minor', why: 'billed by publishes only (alarm notifications); the first million a month are free' },
  'AWS::Lambda::Function': { kind: 'minor', why: 'billed by invocations only: deploy-time lookups and rotations, inside the free tier' },
  'AWS::CodeBuild::Project': { kind: 'minor', why: 'billed by build minutes only, per deploy, not per month' },
  'AWS::Serverless::Application': { kind: 'minor', why: 'the secret rotation application: its function is billed by invocations only' },
  'AWS::IAM::Role': { kind: 'free', why: FREE_IAM },
  'AWS::IAM::Policy': { kind: 'free', why: FREE_IAM },
  'AWS::IAM::ManagedPolicy': { kind: 'free', why: FREE_IAM },
  'AWS::IAM::InstanceProfile': { kind: 'free', why: FREE_IAM },
  'AWS::EC2::VPC': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::Subnet': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::RouteTable': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::Route': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::SubnetRouteTableAssociation': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::InternetGateway': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::VPCGatewayAttachment': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::SecurityGroup': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::SecurityGroupIngress': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::SecurityGroupEgress': { kind: 'free', why: FREE_NETWORK },
  'AWS::EC2::LaunchTemplate': { kind: 'free', why: 'the instances it launches are priced with their Auto Scaling group' },
  'AWS::EC2::VPCEndpointService': {
    kind: 'free',
    why: "the provider side of PrivateLink: its Network Load Balancer is priced, the consumers' endpoints are",
  },
  'AWS::EC2::VPCEndpointServicePermissions': { kind: 'free', why: FREE_PART },
  'AWS::ECS::Cluster': { kind: 'free', why: 'ECS has no charge of its own; its tasks and instances are priced' },
  'AWS::ECS::TaskDefinition': { kind: 'free', why: 'priced with the service that runs it' },
  'AWS::ECS::ClusterCapacityProviderAssociations': { kind: 'free', why: FREE_PART },
  'AWS::ECS::CapacityProvider': { kind: 'free', why: FREE_PART },
  'AWS::ElasticLoadBalancingV2::Listener': { kind: 'free', why: 'priced with its load balancer' },
  'AWS::ElasticLoadBalancingV2::ListenerRule': { kind: 'free', why: 'priced with its load balancer (rule evaluations are an LCU dimension)' },
  'AWS::ElasticLoadBalancingV2::TargetGroup': { kind: 'free', why: 'priced with its load balancer' },
  'AWS::ApplicationAutoScaling::ScalableTarget': { kind: 'free', why: FREE_PART },
  'AWS::AutoScaling::LifecycleHook': { kind: 'free', why: FREE_PART },
  'AWS::KMS::Alias': { kind: 'free', why: 'priced with its key' },
  'AWS::S3::BucketPolicy': { kind: 'free', why: FREE_PART },
  'AWS::SQS::QueuePolicy': { kind: 'free', why: FREE_PART },
  'AWS::SNS::TopicPolicy': { kind: 'free', why: FREE_PART },
  'AWS::SNS::Subscription': { kind: 'free', why: FREE_PART },
  'AWS::SecretsManager::ResourcePolicy': { kind: 'free', why: FREE_PART },
  'AWS::SecretsManager::RotationSchedule': { kind: 'free', why: 'its rotation function is billed by invocations' },
  'AWS::SecretsManager::SecretTargetAttachment': { kind: 'free', why: FREE_PART },
  'AWS::WAFv2::LoggingConfiguration': { kind: 'free', why: 'its logs are billed where they land' },
  'AWS::WAFv2::WebACLAssociation': { kind: 'free', why: FREE_PART },
  'AWS::RDS::DBSubnetGroup': { kind: 'free', why: FREE_PART },
  'AWS::RDS::DBParameterGroup': { kind: 'free', why: FREE_PART },
  'AWS::RDS::DBClusterParameterGroup': { kind: 'free', why: FREE_PART },
  'AWS::Route53::RecordSet': { kind: 'free', why: 'alias queries to AWS resources have no charge' },
  'AWS::Route53::RecordSetGroup': { kind: 'free', why: "the lanes' shard names: weighted aliases to the lane NLBs, whose queries have no charge" },
  'AWS::Lambda::Permission': { kind: 'free', why: FREE_PART },
  'AWS::ARCZonalShift::ZonalAutoshiftConfiguration': { kind: 'free', why: 'zonal shift and autoshift have no charge' },
  'AWS::CloudFormation::Stack': { kind: 'free', why: 'its resources are priced in its own template' },
  'AWS::CDK::Metadata': { kind: 'free', why: 'not a resource AWS creates' },
};

/** The rule for a type: a `Custom::` resource is a deploy-time function call. */
export function ruleOf(type: string): PricingRule | undefined {
  if (type.startsWith('Custom::') || type === 'AWS::CloudFormation::CustomResource') {
    return { kind: 'free', why: 'a deploy-time call of a function billed by invocations' };
  }
  return CATALOG[type];
}

/** The fixed lines and usage drivers of one resource (no rule: undefined). */
export function priceResource(r: PricedResource, prices: Prices): { readonly lines: CostLine[]; readonly usage: UsageDriver[] } | undefined {
  const rule = ruleOf(r.type);
  if (!rule) return undefined;
  if (rule.kind !== 'priced') return { lines: [], usage: [] };
  const lines = rule.fixed?.(r, prices) ?? [];
  const usage = (rule.usage ?? [])
    .filter(([id]) => r.type !== 'AWS::ElasticLoadBalancingV2::LoadBalancer' || id.startsWith(r.properties.Type === 'network' ? 'nlb' : 'alb'))
    .filter(() => r.type !== 'AWS::EC2::VPCEndpoint' || r.properties.VpcEndpointType === 'Interface')
    .map(([priceId, drivenBy]) => ({
      component: lines[0]?.component ?? r.type.split('::').slice(1).join(' '),
      stack: r.stack,
      logicalId: r.logicalId,
      type: r.type,
      priceId,
      price: prices.get(r.region, priceId, `${r.type}, ${r.stack}/${r.logicalId}`),
      drivenBy,
    }));
  return { lines, usage };
}
