import { createHash } from 'crypto';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as targets from 'aws-cdk-lib/aws-elasticloadbalancingv2-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Construct, IConstruct } from 'constructs';
import { assertAccountId } from '../shared/cross-account-read-role';
import { DELETION_PROTECTION_AFTER_CREATE } from './data';
import { LogBucket } from '../shared/log-bucket';

export interface CellEntryProps {
  readonly cellId: string;
  /** `<app>-<cell>`: names the WAF log group (`aws-waf-logs-<app>-<cell>`) and metrics. */
  readonly namePrefix: string;
  /** Encrypts the WAF log group. */
  readonly encryptionKey: kms.IKey;
  readonly vpc: ec2.IVpc;
  /** Subnets for both load balancers: private, never public. */
  readonly subnets: ec2.SubnetSelection;
  /** The only account allowed to connect to the cell's endpoint service. */
  readonly routerAccount: string;
  /**
   * Other regions whose routers connect to this cell (cross-region PrivateLink): the endpoint
   * service's `SupportedRegions`. Every router reaches every cell, so every other fleet region.
   * @default - routers in the cell's own region only
   */
  readonly consumerRegions?: readonly string[];
  /** Header WAF counts per tenant (the partition key as the router forwards it). */
  readonly tenantHeader: string;
  /** Requests one tenant may send in 5 minutes before WAF blocks it. */
  readonly tenantRequestsPer5Min: number;
  /** `fargate` registers tasks by IP, `ec2` registers instances. */
  readonly targetType: elbv2.TargetType;
  readonly targetPort: number;
  readonly healthCheckPath: string;
  /**
   * ACM certificate for an HTTPS listener.
   * @default - HTTP on port 80, reachable only through PrivateLink
   */
  readonly certificateArn?: string;
}

/**
 * Why the cell's NLB and its ALB target group have cross-zone load balancing off: the path through a
 * cell is zone-aligned, so that the routers drain a zone of the cell by not using its endpoint's
 * address there (docs/operating.md, "Draining a zone"); with cross-zone on, a request entering in a
 * drained zone would still be served anywhere, and one entering elsewhere by the drained zone's tasks.
 */
const ZONE_ALIGNED =
  "Zone-aligned on purpose: a request entering the cell through its endpoint's address in a zone is served by a task in that zone, so a router drains a zone by not using that address (docs/operating.md, Draining a zone); the routers' zonal health checks keep a zone without a healthy task out of use.";

/**
 * The cell's front door. An internal ALB (WAF-throttled per tenant) sits behind an internal NLB
 * that is published as a PrivateLink endpoint service allow-listing only the router account.
 *
 * Why PrivateLink: the router reaches each cell through an interface endpoint in its own VPC, so
 * cells need no routable path, no peering and no overlapping-CIDR constraints, and nothing but
 * the allow-listed account can even open a connection. The NLB's security group has no inbound
 * rule and does not filter PrivateLink traffic, so inside the cell VPC nothing else can reach the
 * NLB either; the ALB accepts traffic only from the NLB's security group.
 */
export class CellEntry extends Construct {
  public readonly loadBalancer: elbv2.ApplicationLoadBalancer;
  public readonly listener: elbv2.ApplicationListener;
  public readonly targetGroup: elbv2.ApplicationTargetGroup;
  public readonly privateLink: elbv2.NetworkLoadBalancer;
  public readonly endpointService: ec2.VpcEndpointService;
  public readonly webAcl: wafv2.CfnWebACL;
  public readonly accessLogs: s3.Bucket;
  /** WAF's log of every request it evaluated (blocked tenants included). */
  public readonly wafLogs: logs.LogGroup;
  /** 443 with a certificate, else 80. */
  public readonly port: number;
  public readonly protocol: 'https' | 'http';

  constructor(scope: Construct, id: string, props: CellEntryProps) {
    super(scope, id);
    assertAccountId('CellEntry: routerAccount', props.routerAccount);
    if (!Number.isInteger(props.tenantRequestsPer5Min) || props.tenantRequestsPer5Min < 10) {
      throw new Error(`CellEntry: tenantRequestsPer5Min ${props.tenantRequestsPer5Min} must be an integer >= 10 (WAF minimum)`);
    }
    this.protocol = props.certificateArn ? 'https' : 'http';
    this.port = props.certificateArn ? 443 : 80;

    this.accessLogs = new LogBucket(this, 'AccessLogs', {
      receives: "the cell load balancers' access logs",
      whyNotKms: 'Elastic Load Balancing delivers access logs only to buckets encrypted with SSE-S3 (AES-256), not SSE-KMS.',
    });

    const nlbSecurityGroup = new ec2.SecurityGroup(this, 'PrivateLinkSecurityGroup', {
      vpc: props.vpc,
      description: `${props.cellId}: PrivateLink NLB; no inbound rules, PrivateLink traffic is not filtered`,
      allowAllOutbound: false,
    });
    const albSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', {
      vpc: props.vpc,
      description: `${props.cellId}: ALB; inbound only from the PrivateLink NLB`,
      allowAllOutbound: false,
    });
    albSecurityGroup.addIngressRule(nlbSecurityGroup, ec2.Port.tcp(this.port), 'from the PrivateLink NLB only');
    nlbSecurityGroup.addEgressRule(albSecurityGroup, ec2.Port.tcp(this.port), 'to the cell ALB');

    this.loadBalancer = new elbv2.ApplicationLoadBalancer(this, 'LoadBalancer', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      internetFacing: false,
      securityGroup: albSecurityGroup,
      dropInvalidHeaderFields: true,
    });
    // No deletion protection in the template, not even `false` (which aws-cdk-lib writes by default):
    // a failed first create must delete the load balancers, and the pipeline switches it on after the
    // first successful deploy (DeletionProtectionAccess), which a template value would undo on update.
    this.loadBalancer.removeAttribute('deletion_protection.enabled');
    this.loadBalancer.logAccessLogs(this.accessLogs, 'alb');

    this.targetGroup = new elbv2.ApplicationTargetGroup(this, 'Targets', {
      vpc: props.vpc,
      targetType: props.targetType,
      port: props.targetPort,
      protocol: elbv2.ApplicationProtocol.HTTP,
      deregistrationDelay: Duration.seconds(30),
      healthCheck: { path: props.healthCheckPath, interval: Duration.seconds(15), healthyThresholdCount: 2, unhealthyThresholdCount: 3 },
    });
    // Zone-aligned (docs/operating.md, "Draining a zone"): a request that enters the cell through its
    // endpoint's address in one zone is served by a task in that zone, so a router that stops sending
    // to a zone's address drains the cell's load balancer nodes and tasks there too.
    this.targetGroup.setAttribute('load_balancing.cross_zone.enabled', 'false');
    Validations.of(this.targetGroup).acknowledge({
      id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.15',
      reason: ZONE_ALIGNED,
    });
    this.listener = props.certificateArn
      ? this.loadBalancer.addListener('Https', {
          port: 443,
          protocol: elbv2.ApplicationProtocol.HTTPS,
          certificates: [elbv2.ListenerCertificate.fromArn(props.certificateArn)],
          sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
          defaultTargetGroups: [this.targetGroup],
          open: false,
        })
      : this.loadBalancer.addListener('Http', {
          port: 80,
          protocol: elbv2.ApplicationProtocol.HTTP,
          defaultTargetGroups: [this.targetGroup],
          open: false,
        });
    if (!props.certificateArn) {
      Validations.of(this.listener).acknowledge({
        id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.1',
        reason:
          "This cell has no `certificateArn`: the ALB is internal and reached only through the cell's PrivateLink endpoint service. With a certificate the only listener is HTTPS (443), so there is no HTTP to redirect.",
      });
    }

    this.privateLink = new elbv2.NetworkLoadBalancer(this, 'PrivateLink', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      internetFacing: false,
      // Zone-aligned: the NLB's node in a zone forwards to the ALB's node in the same zone (see the target group above).
      crossZoneEnabled: false,
      securityGroups: [nlbSecurityGroup],
      enforceSecurityGroupInboundRulesOnPrivateLinkTraffic: false,
    });
    this.privateLink.removeAttribute('deletion_protection.enabled');
    Validations.of(this.privateLink).acknowledge({ id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.14', reason: ZONE_ALIGNED });
    for (const lb of [this.loadBalancer, this.privateLink])
      Validations.of(lb).acknowledge({ id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.5', reason: DELETION_PROTECTION_AFTER_CREATE });
    this.privateLink.logAccessLogs(this.accessLogs, 'nlb');
    this.privateLink.addListener('Tcp', { port: this.port, protocol: elbv2.Protocol.TCP }).addTargets('Alb', {
      port: this.port,
      targets: [new targets.AlbListenerTarget(this.listener)],
      // Through the ALB's listener to the workload's own health path: the default (`/`) reaches the
      // workload without a partition key and gets 400, so the NLB would see its only target as
      // unhealthy and only its fail-open would keep the path up. HTTPS on a TLS cell's 443.
      healthCheck: {
        protocol: props.certificateArn ? elbv2.Protocol.HTTPS : elbv2.Protocol.HTTP,
        path: props.healthCheckPath,
        interval: Duration.seconds(15),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 3,
      },
    });

    this.endpointService = new ec2.VpcEndpointService(this, 'EndpointService', {
      vpcEndpointServiceLoadBalancers: [this.privateLink],
      // The allow-list below is the control; acceptance would need a human for every router endpoint.
      acceptanceRequired: false,
      allowedPrincipals: [
        new iam.ArnPrincipal(Stack.of(this).formatArn({ service: 'iam', region: '', account: props.routerAccount, resource: 'root' })),
      ],
      // Cross-region PrivateLink: routers in these regions create interface endpoints with
      // ServiceRegion = this region ("Cross-Region access" in AWS PrivateLink's "Share your services").
      ...(props.consumerRegions && props.consumerRegions.length > 0 ? { allowedRegions: [...props.consumerRegions] } : {}),
    });

    this.webAcl = new wafv2.CfnWebACL(this, 'WebAcl', {
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      visibilityConfig: { cloudWatchMetricsEnabled: true, sampledRequestsEnabled: true, metricName: `${props.namePrefix}-web-acl` },
      rules: [
        {
          name: 'per-tenant-rate',
          priority: 0,
          action: { block: {} },
          statement: {
            rateBasedStatement: {
              limit: props.tenantRequestsPer5Min,
              evaluationWindowSec: 300,
              aggregateKeyType: 'CUSTOM_KEYS',
              customKeys: [{ header: { name: props.tenantHeader, textTransformations: [{ priority: 0, type: 'NONE' }] } }],
            },
          },
          visibilityConfig: { cloudWatchMetricsEnabled: true, sampledRequestsEnabled: true, metricName: `${props.namePrefix}-tenant-rate` },
        },
      ],
    });
    new wafv2.CfnWebACLAssociation(this, 'WebAclAssociation', {
      resourceArn: this.loadBalancer.loadBalancerArn,
      webAclArn: this.webAcl.attrArn,
    });
    this.wafLogs = new logs.LogGroup(this, 'WafLogs', {
      // WAF delivers only to log groups whose name starts with aws-waf-logs-.
      logGroupName: `aws-waf-logs-${props.namePrefix}`,
      // A year: Control Tower's CT.CLOUDWATCH.PR.2, and what an incident review looks back over.
      retention: logs.RetentionDays.ONE_YEAR,
      encryptionKey: props.encryptionKey,
      // Kept when the stack is deleted, but deleted when the create that made it rolls back: its name
      // is fixed, and a kept one would fail the retried create with "already exists"
      // (RetainExceptOnCreate, CloudFormation's DeletionPolicy attribute).
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    new wafv2.CfnLoggingConfiguration(this, 'WafLogging', {
      resourceArn: this.webAcl.attrArn,
      logDestinationConfigs: [this.wafLogs.logGroupArn],
    });
  }
}

/**
 * What the routers link: an endpoint service and the NLB it publishes, a cell's (`CellEntry`, whose
 * NLB is `privateLink`) or cell zero's (`AdoptionEntry`, whose NLB is `loadBalancer`).
 */
export type EndpointServiceEntry = IConstruct & { readonly endpointService: IConstruct } & (
    { readonly privateLink: IConstruct } | { readonly loadBalancer: IConstruct }
  );

/**
 * A fingerprint of what a cell's endpoint service name depends on: the endpoint service and the
 * PrivateLink NLB behind it as CloudFormation will see them (logical ids and properties, resolved
 * in the cell's stack). A change that can replace the service (and so change its name) changes the
 * fingerprint; the router stacks carry it in their lookup of the name, so CloudFormation runs the
 * lookup again exactly then (a custom resource whose properties never change is never updated).
 */
export function endpointServiceFingerprint(entry: EndpointServiceEntry): string {
  const stack = Stack.of(entry);
  const service = entry.endpointService.node.findAll().find((c) => c instanceof ec2.CfnVPCEndpointService);
  // A cell's entry also has a `loadBalancer` (its ALB): the service's NLB is `privateLink` there.
  const nlb = 'privateLink' in entry ? entry.privateLink : entry.loadBalancer;
  const cfn = [service, nlb.node.defaultChild].map((child) => {
    const render = (child as { _toCloudFormation?: () => unknown } | undefined)?._toCloudFormation;
    // aws-cdk-lib renders a resource's CloudFormation through this method; checked, so a change fails synth loudly.
    if (typeof render !== 'function')
      throw new Error(
        'endpointServiceFingerprint: aws-cdk-lib no longer renders resources through _toCloudFormation(); update lib/constructs/cell/entry.ts',
      );
    return stack.resolve(render.call(child));
  });
  return createHash('sha256').update(JSON.stringify(cfn)).digest('hex').slice(0, 16);
}
