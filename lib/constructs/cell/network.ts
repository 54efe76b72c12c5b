import { RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { NatGateways } from '../../domain/fleet/types';

/** The cell's own VPC, as a cell's props describe it. */
export interface CellNetworkOptions {
  /** The VPC's IPv4 range (/16 … /22); distinct from every other cell's (the fleet config checks it). */
  readonly cidr: string;
  /**
   * AZ IDs (`euw1-az1`), at least 2: IDs name the same zone in every account (the routers' and the
   * cell's), and synth looks nothing up.
   */
  readonly availabilityZones: readonly string[];
  /**
   * `per-zone`: a NAT gateway in each zone (a zone's outage stays in it); `one`: one, in the first
   * zone's public subnet, which every zone's app subnets route through. @default 'per-zone'
   */
  readonly natGateways?: NatGateways;
  /**
   * Days to keep VPC flow logs.
   * @default logs.RetentionDays.ONE_YEAR
   */
  readonly flowLogRetention?: logs.RetentionDays;
}

export interface CellNetworkProps extends CellNetworkOptions {
  /** Encrypts the flow logs. */
  readonly encryptionKey: kms.IKey;
}

const SUBNET_TIERS = 3;

/**
 * The cell's own VPC: public (NAT only), app (load balancers, compute) and isolated data subnets
 * in every AZ, one NAT gateway per AZ so an AZ failure stays in that AZ (or one for the VPC, the
 * shape's choice), all traffic flow-logged.
 * No peering, no transit gateway: the only way in is the cell's PrivateLink endpoint service.
 */
export class CellNetwork extends Construct {
  public readonly vpc: ec2.Vpc;
  public readonly flowLogs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: CellNetworkProps) {
    super(scope, id);
    if (props.availabilityZones.length < 2) {
      throw new Error(`CellNetwork: availabilityZones needs at least 2 zones, got ${props.availabilityZones.length}`);
    }
    const prefix = Number(props.cidr.split('/')[1]);
    // Split the range evenly across tiers × AZs (rounded up to a power of two).
    const cidrMask = prefix + Math.ceil(Math.log2(SUBNET_TIERS * props.availabilityZones.length));
    if (!Number.isInteger(prefix) || cidrMask > 28) {
      throw new Error(`CellNetwork: cidr ${props.cidr} is too small for ${props.availabilityZones.length} AZs; use /22 or larger`);
    }
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr(props.cidr),
      availabilityZones: [...props.availabilityZones],
      natGateways: props.natGateways === 'one' ? 1 : props.availabilityZones.length,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask, mapPublicIpOnLaunch: false },
        { name: 'app', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask },
        { name: 'data', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask },
      ],
    });
    placeSubnetsByZoneId(this.vpc);
    acknowledgeDefaultSecurityGroupProvider(this.vpc);
    Validations.of(this.vpc).acknowledge({
      id: 'CloudFormation-Validate::W3010',
      reason: 'AZs are explicit in the fleet config on purpose: synth runs offline, and a cell must not move AZs between deploys.',
    });
    for (const subnet of this.vpc.publicSubnets) {
      Validations.of(subnet).acknowledge({
        id: 'NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW',
        reason:
          'Public subnets hold only the NAT gateways (no load balancer, no instance, no public IPs); their default route to the internet gateway is what NAT needs.',
      });
    }
    this.flowLogs = new logs.LogGroup(this, 'FlowLogs', {
      retention: props.flowLogRetention ?? logs.RetentionDays.ONE_YEAR,
      encryptionKey: props.encryptionKey,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.vpc.addFlowLog('FlowLog', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(this.flowLogs),
      trafficType: ec2.FlowLogTrafficType.ALL,
    });
  }

  public get appSubnets(): ec2.SubnetSelection {
    return { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS };
  }

  public get dataSubnets(): ec2.SubnetSelection {
    return { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
  }
}

/**
 * The fleet lists zones by AZ ID, which CDK's Vpc takes as opaque zone labels: every subnet is then
 * placed with `AvailabilityZoneId` instead of `AvailabilityZone` (AWS::EC2::Subnet takes either).
 * An AZ ID is the same physical zone in every account, so a router's interface endpoint (router
 * account) and a cell's endpoint service (cell account) listed in the same IDs share their zones;
 * AZ names map to different zones per account ("AZ IDs", AWS Regions and Availability Zones guide).
 */
export function placeSubnetsByZoneId(vpc: ec2.Vpc): void {
  for (const subnet of [...vpc.publicSubnets, ...vpc.privateSubnets, ...vpc.isolatedSubnets]) {
    const cfn = subnet.node.defaultChild as ec2.CfnSubnet;
    const zoneId = subnet.availabilityZone;
    if (!/^[a-z]+\d-az\d+$/.test(zoneId)) throw new Error(`subnet ${subnet.node.path}: zone \`${zoneId}\` is not an AZ ID (for example euw1-az1)`);
    cfn.addPropertyDeletionOverride('AvailabilityZone');
    cfn.addPropertyOverride('AvailabilityZoneId', zoneId);
  }
}

/**
 * `restrictDefaultSecurityGroup` (on by default) adds a stack-wide custom resource whose Lambda
 * removes the default security group's rules at deploy time; acknowledged for Control Tower's
 * Lambda-in-VPC control, since it runs only during a deploy and calls the EC2 API, never the VPC.
 */
export function acknowledgeDefaultSecurityGroupProvider(vpc: ec2.Vpc): void {
  const handler = Stack.of(vpc).node.tryFindChild('Custom::VpcRestrictDefaultSGCustomResourceProvider')?.node.tryFindChild('Handler');
  if (!handler) return;
  Validations.of(handler).acknowledge({
    id: 'ControlTower::CT.LAMBDA.PR.3',
    reason:
      "CDK's provider for restrictDefaultSecurityGroup: runs only while CloudFormation deploys the stack, to remove the default security group's rules through the EC2 API; it handles no data and needs no network path into the VPC.",
  });
}
