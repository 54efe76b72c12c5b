import { Match, Template } from 'aws-cdk-lib/assertions';
import { Fleet } from '../../../lib/domain/fleet';
import { BareCell, synthBareCells } from '../../support/cell';
import { exampleFleet } from '../../support/fleet';

const CERT = 'arn:aws:acm:eu-west-1:333333333331:certificate/11111111-2222-3333-4444-555555555555';

describe('CellEntry', () => {
  let http: Template;
  let https: Template;
  let fleet: Fleet;
  let cells: Record<string, BareCell>;
  beforeAll(() => {
    const base = exampleFleet();
    fleet = { ...base, cells: base.cells.map((c) => (c.id === 'eu-1' ? { ...c, certificateArn: CERT } : c)) };
    cells = synthBareCells(['eu-2', 'eu-1'], fleet);
    http = cells['eu-2'].template;
    https = cells['eu-1'].template;
  });

  it('publishes the cell as a PrivateLink endpoint service that allow-lists only the router account', () => {
    http.resourceCountIs('AWS::EC2::VPCEndpointService', 1);
    http.hasResourceProperties('AWS::EC2::VPCEndpointService', {
      NetworkLoadBalancerArns: [{ Ref: Match.stringLikeRegexp('PrivateLink') }],
    });
    http.resourceCountIs('AWS::EC2::VPCEndpointServicePermissions', 1);
    http.hasResourceProperties('AWS::EC2::VPCEndpointServicePermissions', {
      AllowedPrincipals: [`arn:aws:iam::${fleet.accounts.router}:root`],
    });
  });

  it("lets the other regions' routers connect over cross-region PrivateLink", () => {
    // eu-2 is in eu-west-1; the routers of us-east-1 reach it with ServiceRegion eu-west-1.
    http.hasResourceProperties('AWS::EC2::VPCEndpointService', { SupportedRegions: ['us-east-1'] });
  });

  it('has no internet-facing load balancer and nothing open to the world', () => {
    const lbs = Object.values(http.findResources('AWS::ElasticLoadBalancingV2::LoadBalancer'));
    expect(lbs).toHaveLength(2);
    for (const lb of lbs) expect(lb.Properties.Scheme).toBe('internal');
    const ingress = [
      ...Object.values(http.findResources('AWS::EC2::SecurityGroupIngress')).map((r) => r.Properties),
      ...Object.values(http.findResources('AWS::EC2::SecurityGroup')).flatMap((r) => r.Properties.SecurityGroupIngress ?? []),
    ];
    expect(ingress.length).toBeGreaterThan(0);
    for (const rule of ingress) {
      expect(rule.CidrIp).toBeUndefined();
      expect(rule.CidrIpv6).toBeUndefined();
      expect(rule.SourceSecurityGroupId).toBeDefined();
    }
    http.resourceCountIs('AWS::EC2::VPCPeeringConnection', 0);
  });

  it('is zone-aligned: the NLB and the ALB target group keep a request in the zone it entered (a router drains a zone by its address there)', () => {
    for (const template of [http, https]) {
      const [nlb] = Object.values(template.findResources('AWS::ElasticLoadBalancingV2::LoadBalancer', { Properties: { Type: 'network' } }));
      expect(nlb.Properties.LoadBalancerAttributes).toContainEqual({ Key: 'load_balancing.cross_zone.enabled', Value: 'false' });
      const [targets] = Object.values(template.findResources('AWS::ElasticLoadBalancingV2::TargetGroup', { Properties: { Protocol: 'HTTP' } }));
      expect(targets.Properties.TargetGroupAttributes).toContainEqual({ Key: 'load_balancing.cross_zone.enabled', Value: 'false' });
    }
  });

  it('lets only PrivateLink reach the NLB and only the NLB reach the ALB', () => {
    http.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', {
      Type: 'network',
      EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic: 'off',
    });
    const groups = http.findResources('AWS::EC2::SecurityGroup');
    const [nlbGroup] = Object.entries(groups).find(([id]) => id.includes('PrivateLinkSecurityGroup'))!;
    const [albGroup] = Object.entries(groups).find(([id]) => id.includes('LoadBalancerSecurityGroup'))!;
    expect(groups[nlbGroup].Properties.SecurityGroupIngress).toBeUndefined();
    const albIngress = Object.values(
      http.findResources('AWS::EC2::SecurityGroupIngress', { Properties: { GroupId: { 'Fn::GetAtt': [albGroup, 'GroupId'] } } }),
    );
    expect(albIngress).toHaveLength(1);
    expect(albIngress[0].Properties).toMatchObject({ SourceSecurityGroupId: { 'Fn::GetAtt': [nlbGroup, 'GroupId'] }, FromPort: 80, ToPort: 80 });
    expect(groups[albGroup].Properties.SecurityGroupIngress).toBeUndefined();
  });

  it('forwards the NLB to the ALB listener', () => {
    http.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', { TargetType: 'alb', Protocol: 'TCP', Port: 80 });
  });

  it("health-checks the ALB through its listener on the workload's health path (`/` has no partition key: 400), HTTPS on a TLS cell", () => {
    http.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      TargetType: 'alb',
      HealthCheckProtocol: 'HTTP',
      HealthCheckPath: fleet.workload.healthCheckPath,
    });
    https.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      TargetType: 'alb',
      Port: 443,
      HealthCheckProtocol: 'HTTPS',
      HealthCheckPath: fleet.workload.healthCheckPath,
    });
    expect(fleet.workload.healthCheckPath).not.toBe('/');
  });

  it('throttles a single noisy tenant with a WAF rate rule keyed on the partition-key header', () => {
    http.hasResourceProperties('AWS::WAFv2::WebACL', {
      Scope: 'REGIONAL',
      Rules: [
        Match.objectLike({
          Action: { Block: {} },
          Statement: {
            RateBasedStatement: {
              Limit: 60000,
              AggregateKeyType: 'CUSTOM_KEYS',
              CustomKeys: [{ Header: { Name: 'x-tenant-id', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } }],
            },
          },
        }),
      ],
    });
    http.resourceCountIs('AWS::WAFv2::WebACLAssociation', 1);
  });

  it('logs every WAF decision to an encrypted log group WAF can deliver to', () => {
    http.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: 'aws-waf-logs-orders-eu-2', KmsKeyId: Match.anyValue() });
    http.hasResourceProperties('AWS::WAFv2::LoggingConfiguration', {
      ResourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('WebAcl'), 'Arn'] },
      LogDestinationConfigs: [{ 'Fn::GetAtt': [Match.stringLikeRegexp('WafLogs'), 'Arn'] }],
    });
  });

  it('logs load-balancer access to an encrypted, private, TLS-only bucket', () => {
    http.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', {
      Type: 'application',
      LoadBalancerAttributes: Match.arrayWith([{ Key: 'access_logs.s3.enabled', Value: 'true' }]),
    });
    http.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', {
      Type: 'application',
      LoadBalancerAttributes: Match.arrayWith([{ Key: 'routing.http.drop_invalid_header_fields.enabled', Value: 'true' }]),
    });
    http.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
    });
  });

  it('serves HTTPS with a modern policy when the cell has a certificate', () => {
    https.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Protocol: 'HTTPS',
      Port: 443,
      Certificates: [{ CertificateArn: CERT }],
      SslPolicy: Match.stringLikeRegexp('TLS13'),
    });
    https.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Protocol: 'TCP', Port: 443 });
    // What CellStack's `Endpoint` output is made of.
    expect([cells['eu-1'].cell.entry.protocol, cells['eu-1'].cell.entry.port]).toEqual(['https', 443]);
    http.resourcePropertiesCountIs('AWS::ElasticLoadBalancingV2::Listener', { Protocol: 'HTTPS' }, 0);
  });
});
