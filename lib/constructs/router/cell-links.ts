import * as path from 'path';
import { CustomResource, Duration, NestedStack, Stack, Tags } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as route53Targets from 'aws-cdk-lib/aws-route53-targets';
import * as lambdaNodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { bundledHandler } from '../shared/bundled-handler';
import { LookupProperties, SERVICE_NAME_ATTRIBUTE } from '../../runtime/handlers/endpoint-lookup-properties';

/** One cell as a router region reaches it. */
export interface LinkedCell {
  readonly id: string;
  /** The cell's region: a cell of another region is reached over cross-region PrivateLink. */
  readonly region: string;
  readonly account: string;
  /** The cell's PrivateLink listener: 443 with a certificate, else 80. */
  readonly port: number;
  /** SSM parameter in the cell's account and region that holds its endpoint service name. */
  readonly serviceNameParameter: string;
  /** Role in the cell's account that may read that parameter. */
  readonly readerRoleName: string;
  /**
   * endpointServiceFingerprint of the cell: when it changes, the name is read again (its service may
   * have been replaced). @default - read once, on create
   */
  readonly fingerprint?: string;
}

export interface CellLinkProps {
  readonly cell: LinkedCell;
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroup: ec2.ISecurityGroup;
  /** The router VPC's private zone naming each cell. @default - no record */
  readonly zone?: route53.IHostedZone;
  /** The function that reads the cell's endpoint service name (CellEndpointLookup). */
  readonly lookup: CellEndpointLookup;
}

/**
 * The handler of a router stack's `Custom::CellEndpointServiceName` lookups
 * (endpoint-lookup-handler.ts): assumes a cell's reader role and reads its endpoint service name,
 * retrying AccessDenied for a minute while a new role's trust and policy propagate. One per router
 * stack, shared by its nested link stacks.
 */
export class CellEndpointLookup extends Construct {
  public readonly handler: lambdaNodejs.NodejsFunction;

  constructor(scope: Construct, id: string, props: { readonly role: iam.IRole }) {
    super(scope, id);
    this.handler = bundledHandler(this, {
      entry: path.join(__dirname, '..', '..', 'runtime', 'handlers', 'endpoint-lookup-handler.ts'),
      role: props.role,
      description: "Reads each cell's endpoint service name from its account (the cell's reader role)",
      logs: 'the cell endpoint lookups (cell, parameter name, service name or error)',
      calls: "assuming the cells' reader roles (STS) and reading their endpoint service names (SSM)",
    });
  }
}

/**
 * A router region's way to one cell: the cell's endpoint service name, read at deploy time from the
 * cell's own account (so nothing is copied by hand), an interface endpoint to it (cross-region
 * PrivateLink when the cell lives in another region), and `<cell>.<zone>` pointing at the endpoint,
 * so the cell's mapping endpoint resolves in this router VPC.
 */
export class CellLink extends Construct {
  public readonly endpoint: ec2.InterfaceVpcEndpoint;
  public readonly serviceName: string;
  public readonly record?: route53.ARecord;

  constructor(scope: Construct, id: string, props: CellLinkProps) {
    super(scope, id);
    const { cell } = props;
    const properties: LookupProperties = {
      CellId: cell.id,
      RoleArn: Stack.of(this).formatArn({ service: 'iam', region: '', account: cell.account, resource: 'role', resourceName: cell.readerRoleName }),
      Region: cell.region,
      ParameterName: cell.serviceNameParameter,
      // Part of the resource's properties: a new fingerprint is an update, which reads the name again.
      ...(cell.fingerprint ? { Fingerprint: cell.fingerprint } : {}),
    };
    // `ServiceName/Read`: a custom resource's ServiceToken cannot be updated, so a template that had
    // the lookup on another provider replaces it (same physical id `<cell>:<parameter>[:<fingerprint>]`,
    // lookupPhysicalId, and the same value; the old one's delete does nothing).
    const lookup = new CustomResource(new Construct(this, 'ServiceName'), 'Read', {
      resourceType: 'Custom::CellEndpointServiceName',
      serviceToken: props.lookup.handler.functionArn,
      // The handler answers within its 2 minutes (it aborts a hung call); this bounds a crash.
      serviceTimeout: Duration.minutes(5),
      properties: { ...properties },
    });
    this.serviceName = lookup.getAttString(SERVICE_NAME_ATTRIBUTE);
    const routerRegion = Stack.of(this).region;
    this.endpoint = new ec2.InterfaceVpcEndpoint(this, 'Endpoint', {
      vpc: props.vpc,
      service: new ec2.InterfaceVpcEndpointService(this.serviceName, cell.port),
      // Cross-region PrivateLink: the cell's endpoint service lists this region in SupportedRegions.
      ...(cell.region !== routerRegion ? { serviceRegion: cell.region } : {}),
      privateDnsEnabled: false,
      open: false,
      subnets: props.subnets,
      securityGroups: [props.securityGroup],
    });
    Tags.of(this.endpoint).add('cell', cell.id);
    if (props.zone) {
      // Alias to the endpoint's regional name, which answers with every zonal address of the endpoint.
      this.record = new route53.ARecord(this, 'Name', {
        zone: props.zone,
        recordName: cell.id,
        target: route53.RecordTarget.fromAlias(new route53Targets.InterfaceVpcEndpointTarget(this.endpoint)),
      });
    }
  }
}

/** Cells per nested stack of links: each costs 3 resources (lookup, endpoint, record), plus its alarm. */
export const CELLS_PER_LINK_STACK = 100;

/**
 * The links of a batch of cells, in a nested stack of their own: every router region links every
 * cell of the fleet, which would pass CloudFormation's 500 resources per stack at about 100 cells.
 */
export class CellLinksStack extends NestedStack {
  public readonly links: readonly CellLink[];

  constructor(scope: Construct, id: string, props: Omit<CellLinkProps, 'cell'> & { readonly cells: readonly LinkedCell[] }) {
    super(scope, id, { description: `Interface endpoints and names of cells ${props.cells[0]?.id} … ${props.cells[props.cells.length - 1]?.id}` });
    this.links = props.cells.map((cell) => new CellLink(this, `Cell-${cell.id}`, { ...props, cell }));
    // The names in RECORD_LANES chains: CloudFormation would otherwise send every record of the batch
    // to Route 53 at once, past its 5 ChangeResourceRecordSets requests a second per account
    // (Route 53 Developer Guide, "Quotas", "Number of API requests"), and throttled changes fail.
    this.links.forEach((link, i) => {
      const before = this.links[i - RECORD_LANES];
      if (link.record && before?.record) link.record.node.addDependency(before.record);
    });
  }
}

/**
 * How many names of a links stack are created at once. Each waits for its endpoint (minutes) and then
 * for Route 53 to apply it (INSYNC, tens of seconds), so five chains per stack, across a region's
 * few links stacks, stay far under Route 53's request rate while 100 names take minutes, not hours.
 */
export const RECORD_LANES = 5;
