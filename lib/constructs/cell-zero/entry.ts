import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as targets from 'aws-cdk-lib/aws-elasticloadbalancingv2-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { assertAccountId } from '../shared/cross-account-read-role';
import { LogBucket } from '../shared/log-bucket';

export interface AdoptionEntryProps {
  readonly cellId: string;
  /** The existing VPC (the existing load balancer's). */
  readonly vpc: ec2.IVpc;
  /** Subnets of that VPC for the NLB: private, at least two Availability Zones. */
  readonly subnets: ec2.SubnetSelection;
  /** ARN of the existing Application Load Balancer: the NLB's only target (an ALB-type target group). */
  readonly loadBalancerArn: string;
  /** Port of the ALB listener the NLB forwards to. */
  readonly listenerPort: number;
  /** The NLB listener's port: what the routers' interface endpoints connect to (443 for TLS passed through, else 80). */
  readonly port: number;
  /** Path of the NLB's health check against the ALB. */
  readonly healthCheckPath: string;
  /**
   * Protocol of the NLB's health check against the ALB listener (an ALB-type target group checks
   * HTTP or HTTPS). @default elbv2.Protocol.HTTP
   */
  readonly healthCheckProtocol?: elbv2.Protocol;
  /** The only account allowed to connect to the endpoint service: the routers'. */
  readonly routerAccount: string;
  /**
   * Other regions whose routers connect (cross-region PrivateLink): the service's `SupportedRegions`.
   * @default - routers in this region only
   */
  readonly consumerRegions?: readonly string[];
}

/**
 * Cell zero's front door for the routers, beside the existing stack and changing none of it: an
 * internal NLB whose one target is the existing Application Load Balancer (an ALB-type target
 * group: the NLB forwards TCP to the ALB's listener, TLS passed through), published as a
 * PrivateLink endpoint service allow-listing only the router account, like a cell's (lib/constructs/cell/entry.ts).
 *
 * The NLB has no security group: an NLB's security groups can only be set when it is created, and
 * without one the ALB sees the NLB's private addresses, which an ALB serving its VPC already admits
 * (docs/cell-zero.md, "What the existing stack must allow").
 */
export class AdoptionEntry extends Construct {
  public readonly loadBalancer: elbv2.NetworkLoadBalancer;
  public readonly targetGroup: elbv2.NetworkTargetGroup;
  public readonly endpointService: ec2.VpcEndpointService;
  public readonly accessLogs: LogBucket;

  constructor(scope: Construct, id: string, props: AdoptionEntryProps) {
    super(scope, id);
    assertAccountId('AdoptionEntry: routerAccount', props.routerAccount);
    if (!/^arn:[^:]+:elasticloadbalancing:[^:]+:\d{12}:loadbalancer\/app\//.test(props.loadBalancerArn)) {
      throw new Error(
        `AdoptionEntry: loadBalancerArn \`${props.loadBalancerArn}\` must be an Application Load Balancer's ARN (…:loadbalancer/app/…): an ALB-type target group takes nothing else`,
      );
    }
    this.accessLogs = new LogBucket(this, 'AccessLogs', {
      receives: "the adoption NLB's access logs",
      whyNotKms: 'Elastic Load Balancing delivers access logs only to buckets encrypted with SSE-S3 (AES-256), not SSE-KMS.',
    });
    this.loadBalancer = new elbv2.NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      internetFacing: false,
      crossZoneEnabled: true,
      // No security group, explicitly: cdk.json's `networkLoadBalancerWithSecurityGroupByDefault`
      // would otherwise give it one with no inbound rule and a deny-all outbound rule, and an NLB's
      // health checks and forwarded traffic obey its outbound rules (nothing would reach the ALB).
      disableSecurityGroups: true,
    });
    this.loadBalancer.logAccessLogs(this.accessLogs, 'nlb');
    Validations.of(this.loadBalancer).acknowledge({
      id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.5',
      reason:
        'The adoption NLB holds no state and fronts the existing ALB only: removing cell zero from the fleet file must delete it, and a re-created one is the same path (the routers read its service name again).',
    });
    this.targetGroup = new elbv2.NetworkTargetGroup(this, 'Targets', {
      vpc: props.vpc,
      port: props.listenerPort,
      protocol: elbv2.Protocol.TCP,
      targetType: elbv2.TargetType.ALB,
      targets: [new targets.AlbArnTarget(props.loadBalancerArn, props.listenerPort)],
      healthCheck: {
        protocol: props.healthCheckProtocol ?? elbv2.Protocol.HTTP,
        path: props.healthCheckPath,
        interval: Duration.seconds(15),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 3,
      },
    });
    this.loadBalancer.addListener('Tcp', { port: props.port, protocol: elbv2.Protocol.TCP, defaultTargetGroups: [this.targetGroup] });
    this.endpointService = new ec2.VpcEndpointService(this, 'EndpointService', {
      vpcEndpointServiceLoadBalancers: [this.loadBalancer],
      // The allow-list is the control, as for every cell.
      acceptanceRequired: false,
      allowedPrincipals: [
        new iam.ArnPrincipal(Stack.of(this).formatArn({ service: 'iam', region: '', account: props.routerAccount, resource: 'root' })),
      ],
      ...(props.consumerRegions && props.consumerRegions.length > 0 ? { allowedRegions: [...props.consumerRegions] } : {}),
    });
  }
}
