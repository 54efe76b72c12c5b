import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { CellNetwork } from '../../../lib/constructs/cell';
import { TestStack } from '../../support/cell';

describe('CellNetwork', () => {
  let template: Template;
  beforeAll(() => {
    const stack = new TestStack();
    new CellNetwork(stack, 'Network', {
      cidr: '10.4.0.0/20',
      availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'],
      encryptionKey: new kms.Key(stack, 'Key'),
    });
    template = Template.fromStack(stack);
  });

  it('is a VPC of its own with the configured CIDR and no peering', () => {
    template.resourceCountIs('AWS::EC2::VPC', 1);
    template.hasResourceProperties('AWS::EC2::VPC', { CidrBlock: '10.4.0.0/20' });
    template.resourceCountIs('AWS::EC2::VPCPeeringConnection', 0);
    template.resourceCountIs('AWS::EC2::TransitGatewayAttachment', 0);
  });

  it('spans every configured AZ with public, app and isolated tiers and a NAT per AZ', () => {
    template.resourceCountIs('AWS::EC2::Subnet', 9);
    for (const az of ['euw1-az1', 'euw1-az2', 'euw1-az3']) {
      expect(Object.keys(template.findResources('AWS::EC2::Subnet', { Properties: { AvailabilityZoneId: az } }))).toHaveLength(3);
    }
    template.resourceCountIs('AWS::EC2::NatGateway', 3);
    template.hasResourceProperties('AWS::EC2::Subnet', { CidrBlock: '10.4.0.0/24', MapPublicIpOnLaunch: false });
  });

  it('flow-logs all traffic to CloudWatch Logs', () => {
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'ALL', ResourceType: 'VPC', LogDestinationType: 'cloud-watch-logs' });
    template.hasResourceProperties('AWS::Logs::LogGroup', {
      RetentionInDays: 365,
      KmsKeyId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Key'), 'Arn'] },
    });
  });

  it('refuses a single AZ and a range too small to split', () => {
    const attempt = (cidr: string, availabilityZones: string[]) => () => {
      const stack = new TestStack();
      new CellNetwork(stack, 'N', { cidr, availabilityZones, encryptionKey: new kms.Key(stack, 'Key') });
    };
    expect(attempt('10.0.0.0/20', ['euw1-az1'])).toThrow(/at least 2 zones/);
    expect(attempt('10.0.0.0/26', ['euw1-az1', 'euw1-az2', 'euw1-az3'])).toThrow(/too small/);
  });
});

describe("CellNetwork with one NAT gateway (a shape's natGateways: 'one')", () => {
  const stack = new TestStack();
  new CellNetwork(stack, 'Network', {
    cidr: '10.4.0.0/20',
    availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'],
    natGateways: 'one',
    encryptionKey: new kms.Key(stack, 'Key'),
  });
  const template = Template.fromStack(stack);

  it("puts the one gateway in the first zone's public subnet, and routes every zone's app subnet through it", () => {
    const nats = Object.entries(template.findResources('AWS::EC2::NatGateway'));
    expect(nats).toHaveLength(1);
    const [natId, nat] = nats[0];
    const subnets = template.findResources('AWS::EC2::Subnet');
    const natSubnet = subnets[(nat.Properties.SubnetId as { Ref: string }).Ref];
    expect(natSubnet.Properties).toMatchObject({ AvailabilityZoneId: 'euw1-az1', MapPublicIpOnLaunch: false });
    const defaultRoutes = Object.values(template.findResources('AWS::EC2::Route', { Properties: { DestinationCidrBlock: '0.0.0.0/0' } }));
    const viaNat = defaultRoutes.filter((r) => (r.Properties.NatGatewayId as { Ref?: string } | undefined)?.Ref === natId);
    // The app subnets of all three zones; the public ones go to the internet gateway, the data ones nowhere.
    expect(viaNat).toHaveLength(3);
  });
});
