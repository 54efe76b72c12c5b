import { Duration, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { DELETION_PROTECTION_AFTER_CREATE } from '../cell/data';
import { routerParameters, shardRecordName } from '../../domain/names';
import { configureRouterTargetGroup, ROUTER_DEREGISTRATION_DELAY, ROUTER_PORT } from './router-group';

/** Prefix of the NLB access logs in the router stack's log bucket, for the single entry and the lanes alike. */
export const NLB_ACCESS_LOG_PREFIX = 'nlb';

export interface RouterLaneEntryProps {
  readonly app: string;
  /** Lane number, 1-based. */
  readonly lane: number;
  /** The router VPC (imported: its id and public subnets from the router stack's parameters). */
  readonly vpc: ec2.IVpc;
  /** The router stack's NLB security group: the router tasks admit it on the traffic and readiness ports. */
  readonly securityGroup: ec2.ISecurityGroup;
  /** The router stack's access-log bucket; its policy admits the log delivery service under `nlb/`. */
  readonly accessLogBucket: s3.IBucket;
  /** @default - a TCP listener on port 80 */
  readonly certificateArn?: string;
}

/**
 * A lane's public entry (docs/lanes.md): an internet-facing NLB of its own with ARC zonal shift
 * enabled, one TCP target group (readiness, proxy protocol v2 and no connection termination for
 * unhealthy targets, as the single entry's: also what zonal shift with cross-zone requires, Elastic
 * Load Balancing, "Enable zonal shift for your Network Load Balancer"), and its listener. Its DNS
 * name and hosted zone are published in SSM for `cellctl lanes where` and the shard records.
 */
export class RouterLaneEntry extends Construct {
  public readonly loadBalancer: elbv2.NetworkLoadBalancer;
  public readonly targetGroup: elbv2.NetworkTargetGroup;

  constructor(scope: Construct, id: string, props: RouterLaneEntryProps) {
    super(scope, id);
    if (!Number.isInteger(props.lane) || props.lane < 1) throw new Error(`RouterLaneEntry ${id}: lane ${props.lane} must be a whole number from 1`);
    this.loadBalancer = new elbv2.NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc: props.vpc,
      internetFacing: true,
      vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC },
      crossZoneEnabled: true,
      securityGroups: [props.securityGroup],
    });
    this.loadBalancer.removeAttribute('deletion_protection.enabled');
    Validations.of(this.loadBalancer).acknowledge({ id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.5', reason: DELETION_PROTECTION_AFTER_CREATE });
    // `cellctl zone drain` and ARC's practice runs shift a lane away from a zone (docs/lanes.md).
    this.loadBalancer.setAttribute('zonal_shift.config.enabled', 'true');
    // The bucket's policy is the router stack's (it owns the bucket): set the attributes only.
    this.loadBalancer.setAttribute('access_logs.s3.enabled', 'true');
    this.loadBalancer.setAttribute('access_logs.s3.bucket', props.accessLogBucket.bucketName);
    this.loadBalancer.setAttribute('access_logs.s3.prefix', NLB_ACCESS_LOG_PREFIX);
    this.targetGroup = new elbv2.NetworkTargetGroup(this, 'Targets', {
      vpc: props.vpc,
      port: ROUTER_PORT,
      protocol: elbv2.Protocol.TCP,
      targetType: elbv2.TargetType.IP,
      deregistrationDelay: ROUTER_DEREGISTRATION_DELAY,
    });
    configureRouterTargetGroup(this.targetGroup);
    const forward = elbv2.NetworkListenerAction.forward([this.targetGroup]);
    this.loadBalancer.addListener(
      'Listener',
      props.certificateArn
        ? {
            port: 443,
            protocol: elbv2.Protocol.TLS,
            certificates: [elbv2.ListenerCertificate.fromArn(props.certificateArn)],
            sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
            defaultAction: forward,
          }
        : { port: 80, protocol: elbv2.Protocol.TCP, defaultAction: forward },
    );
    new ssm.StringParameter(this, 'DnsName', {
      parameterName: routerParameters.laneDnsName(props.app, props.lane),
      stringValue: this.loadBalancer.loadBalancerDnsName,
      description: `lane ${props.lane}'s NLB DNS name (cellctl lanes where, the shard records)`,
    });
    new ssm.StringParameter(this, 'LoadBalancerArn', {
      parameterName: routerParameters.laneLoadBalancerArn(props.app, props.lane),
      stringValue: this.loadBalancer.loadBalancerArn,
      description: `lane ${props.lane}'s NLB (cellctl zone drain shifts it away from a drained zone)`,
    });
    new ssm.StringParameter(this, 'HostedZoneId', {
      parameterName: routerParameters.laneHostedZoneId(props.app, props.lane),
      stringValue: this.loadBalancer.loadBalancerCanonicalHostedZoneId,
      description: `lane ${props.lane}'s NLB canonical hosted zone (the shard records' alias targets)`,
    });
  }

  /** Targets failing the lane NLB's readiness check, the lane's own: what its readiness alarm watches. */
  public unhealthyTargets(): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: 'AWS/NetworkELB',
      metricName: 'UnHealthyHostCount',
      dimensionsMap: { LoadBalancer: this.loadBalancer.loadBalancerFullName, TargetGroup: this.targetGroup.targetGroupFullName },
      statistic: 'Maximum',
      period: Duration.minutes(1),
    });
  }
}

/** Where a lane NLB is, as an alias target: its DNS name and canonical hosted zone. */
export interface LaneAliasTarget {
  readonly dnsName: string;
  readonly hostedZoneId: string;
}

export interface ShardRecordsProps {
  readonly region: string;
  readonly hostedZone: { readonly id: string; readonly name: string };
  readonly shards: readonly (readonly number[])[];
  /** Every lane's alias target, by lane number. */
  readonly lanes: ReadonlyMap<number, LaneAliasTarget>;
}

/**
 * One name per shard, `shard-<lanes>.<region>.<zone>`: a weighted alias (equal weights) to each lane
 * NLB of the shard, with target health evaluated, so a lane without a healthy target leaves the
 * answer (Route 53, "Alias records": EvaluateTargetHealth on an ELB alias checks the load
 * balancer's healthy targets). One record set group per shard keeps a stack inside 500 resources.
 */
export class ShardRecords extends Construct {
  constructor(scope: Construct, id: string, props: ShardRecordsProps) {
    super(scope, id);
    const groups: route53.CfnRecordSetGroup[] = [];
    props.shards.forEach((shard, i) => {
      const name = `${shardRecordName(shard, props.region, props.hostedZone.name)}.`;
      const group = new route53.CfnRecordSetGroup(this, `Shard${i}`, {
        hostedZoneId: props.hostedZone.id,
        comment: `shard ${shard.join('-')}: lanes ${shard.join(', ')}`,
        recordSets: shard.map((lane) => {
          const target = props.lanes.get(lane);
          if (!target) throw new Error(`ShardRecords ${id}: shard ${shard.join('-')} names lane ${lane}, which has no alias target`);
          return {
            name,
            type: 'A',
            setIdentifier: `lane-${lane}`,
            weight: 1,
            aliasTarget: { dnsName: target.dnsName, hostedZoneId: target.hostedZoneId, evaluateTargetHealth: true },
          };
        }),
      });
      // At most SHARD_RECORDS_IN_PARALLEL change batches at once: Route 53 throttles an account's
      // changes (50 burst, 10 a second refill; Route 53 guide, "Throttling for Amazon Route 53 API
      // requests"), and CloudFormation would otherwise send every group of the stack together.
      const before = groups[i - SHARD_RECORDS_IN_PARALLEL];
      if (before) group.addResourceDependency(before);
      groups.push(group);
    });
  }
}

/** Shard record groups CloudFormation creates at once. */
export const SHARD_RECORDS_IN_PARALLEL = 10;
